//! Records from files: JSON Lines (plain, gzip or zstd), a JSON array, an Avro object
//! container file or a Parquet file, told apart by their first bytes. Records are streamed: a
//! JSON array is read element by element, an Avro file block by block and a Parquet file row
//! group by row group, so memory does not grow with the input. JSON text is parsed into a
//! reused [`Tape`] rather than a `serde_json::Value` (see the tape's module for why).

use crate::{ProfileError, Tape};
use parquet::file::serialized_reader::SerializedFileReader;
use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Buffer size for reading inputs: large reads keep system calls out of the per-record cost.
const BUFFER: usize = 256 * 1024;

/// One record as a source hands it over.
pub enum Record<'a> {
    /// Decoded by a format's crate (Avro, Parquet) or by the caller.
    Value(Value),
    /// JSON text, parsed without building a `Value`.
    Json(&'a Tape),
}

impl Record<'_> {
    pub fn into_value(self) -> Value {
        match self {
            Record::Value(value) => value,
            Record::Json(tape) => tape.to_value(),
        }
    }
}

/// The layout of an input, as detected from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    JsonLines,
    GzipJsonLines,
    ZstdJsonLines,
    JsonArray,
    AvroContainer,
    Parquet,
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
const AVRO_MAGIC: &[u8] = b"Obj\x01";
const PARQUET_MAGIC: &[u8] = b"PAR1";

fn input_err(name: &str, message: impl std::fmt::Display) -> ProfileError {
    ProfileError::Input(format!("{name}: {message}"))
}

/// Detects the layout of `reader` without consuming it.
pub fn detect(reader: &mut impl BufRead) -> std::io::Result<InputKind> {
    let head = reader.fill_buf()?;
    if head.starts_with(GZIP_MAGIC) {
        return Ok(InputKind::GzipJsonLines);
    }
    if head.starts_with(ZSTD_MAGIC) {
        return Ok(InputKind::ZstdJsonLines);
    }
    if head.starts_with(AVRO_MAGIC) {
        return Ok(InputKind::AvroContainer);
    }
    if head.starts_with(PARQUET_MAGIC) {
        return Ok(InputKind::Parquet);
    }
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    Ok(match first {
        Some(b'[') => InputKind::JsonArray,
        _ => InputKind::JsonLines,
    })
}

/// Streams every record of the file at `path` into `each`.
pub fn read_file(path: &Path, each: &mut dyn FnMut(Record<'_>)) -> Result<InputKind, ProfileError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| input_err(&name, e))?;
    let mut head = BufReader::with_capacity(BUFFER, file);
    if detect(&mut head).map_err(|e| input_err(&name, e))? == InputKind::Parquet {
        // Parquet is read from its footer, so it needs the file itself, not a stream.
        parquet_file(&name, head.into_inner(), each)?;
        return Ok(InputKind::Parquet);
    }
    read_records(&name, head, each)
}

/// Streams every record of `reader` (named `name` in errors) into `each`. Parquet needs a
/// file ([`read_file`]).
pub fn read_records(
    name: &str,
    reader: impl Read,
    each: &mut dyn FnMut(Record<'_>),
) -> Result<InputKind, ProfileError> {
    let mut reader = BufReader::with_capacity(BUFFER, reader);
    let kind = detect(&mut reader).map_err(|e| input_err(name, e))?;
    match kind {
        InputKind::JsonLines => json_lines(name, reader, each)?,
        InputKind::GzipJsonLines => json_lines(
            name,
            BufReader::with_capacity(BUFFER, flate2::read::MultiGzDecoder::new(reader)),
            each,
        )?,
        InputKind::ZstdJsonLines => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(reader)
                .map_err(|e| input_err(name, format!("not a readable zstd file: {e}")))?;
            json_lines(name, BufReader::with_capacity(BUFFER, decoder), each)?
        }
        InputKind::JsonArray => json_array(name, reader, each)?,
        InputKind::AvroContainer => avro_container(name, reader, each)?,
        InputKind::Parquet => {
            return Err(input_err(
                name,
                "a Parquet file is read from its footer: name the file instead of streaming it",
            ));
        }
    }
    Ok(kind)
}

fn parquet_file(
    name: &str,
    file: File,
    each: &mut dyn FnMut(Record<'_>),
) -> Result<(), ProfileError> {
    use parquet::file::reader::FileReader;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| input_err(name, format!("not a readable Parquet file: {e}")))?;
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| input_err(name, format!("Parquet: {e}")))?;
    for (index, row) in rows.enumerate() {
        let row = row.map_err(|e| input_err(name, format!("Parquet row {}: {e}", index + 1)))?;
        each(Record::Value(row.to_json_value()));
    }
    Ok(())
}

fn json_lines(
    name: &str,
    mut reader: impl BufRead,
    each: &mut dyn FnMut(Record<'_>),
) -> Result<(), ProfileError> {
    let mut tape = Tape::default();
    let mut record = |number: u64, line: &[u8]| {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        if blank(text) {
            return Ok(());
        }
        // One check of the whole line is cheaper than the parser's check of every string,
        // and `simdutf8`'s vectorized check a third of the standard library's (3.6 % of
        // profiling the benchmark's file); the standard library's names what is wrong.
        let text = match simdutf8::basic::from_utf8(text) {
            Ok(text) => text,
            Err(_) => std::str::from_utf8(text)
                .map_err(|e| input_err(name, format!("line {number}: not UTF-8: {e}")))?,
        };
        tape.parse_str(text)
            .map_err(|e| input_err(name, format!("line {number}: invalid JSON: {e}")))?;
        each(Record::Json(&tape));
        Ok(())
    };
    // Lines are found in the reader's buffer by `memchr`'s vectorized search and read where
    // they lie; only a line split across two fills is copied. `read_until`, which copies every
    // line and searches a word at a time, took 7 % of profiling the benchmark's file.
    let mut split = Vec::new();
    let mut number = 1;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(input_err(name, format!("line {number}: {e}"))),
        };
        if buffer.is_empty() {
            return match split.is_empty() {
                true => Ok(()),
                false => record(number, &split),
            };
        }
        let Some(end) = memchr::memchr(b'\n', buffer) else {
            split.extend_from_slice(buffer);
            let read = buffer.len();
            reader.consume(read);
            continue;
        };
        if split.is_empty() {
            record(number, &buffer[..end])?;
        } else {
            split.extend_from_slice(&buffer[..end]);
            record(number, &split)?;
            split.clear();
        }
        reader.consume(end + 1);
        number += 1;
    }
}

/// Whether a line holds nothing but whitespace, as `str::trim` sees it (such lines are
/// skipped). Decides on the first byte that is not ASCII whitespace, so a record line costs
/// no UTF-8 check here (the parser checks its strings).
fn blank(line: &[u8]) -> bool {
    let first = line
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'));
    match first {
        None => true,
        Some(b) if b.is_ascii() => false,
        Some(_) => std::str::from_utf8(line).is_ok_and(|s| s.trim().is_empty()),
    }
}

/// Hands each element of a top-level JSON array to the callback as it is parsed.
struct Elements<'a> {
    each: &'a mut dyn FnMut(Record<'_>),
    tape: Tape,
}

impl<'de> Visitor<'de> for Elements<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self.tape.seed())?.is_some() {
            (self.each)(Record::Json(&self.tape));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Elements<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

fn json_array(
    name: &str,
    reader: impl Read,
    each: &mut dyn FnMut(Record<'_>),
) -> Result<(), ProfileError> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let elements = Elements {
        each,
        tape: Tape::default(),
    };
    elements
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end())
        .map_err(|e| input_err(name, format!("invalid JSON: {e}")))
}

fn avro_container(
    name: &str,
    reader: impl Read,
    each: &mut dyn FnMut(Record<'_>),
) -> Result<(), ProfileError> {
    let records = apache_avro::Reader::new(reader)
        .map_err(|e| input_err(name, format!("not a readable Avro container file: {e}")))?;
    for (index, record) in records.enumerate() {
        let record =
            record.map_err(|e| input_err(name, format!("Avro record {}: {e}", index + 1)))?;
        let json = Value::try_from(record)
            .map_err(|e| input_err(name, format!("Avro record {} as JSON: {e}", index + 1)))?;
        each(Record::Value(json));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    fn collect(bytes: &[u8]) -> Result<(InputKind, Vec<Value>), ProfileError> {
        let mut out = Vec::new();
        let kind = read_records("input", bytes, &mut |r| out.push(r.into_value()))?;
        Ok((kind, out))
    }

    #[test]
    fn lines_split_across_buffer_fills_are_read_whole() {
        let text = "{\"a\":\"long enough to cross fills\"}\r\n\n  \n[1,2]\n{\"b\":{\"c\":null}}";
        let whole = collect(text.as_bytes()).expect("readable").1;
        assert_eq!(whole.len(), 3);
        for capacity in 1..=12 {
            let mut out = Vec::new();
            let reader = BufReader::with_capacity(capacity, text.as_bytes());
            json_lines("input", reader, &mut |r| out.push(r.into_value())).expect("readable");
            assert_eq!(out, whole, "a buffer of {capacity} bytes");
        }
        let broken = "{}\n\n{\"a\":1}\n{\"a\":";
        for capacity in [3, 1024] {
            let reader = BufReader::with_capacity(capacity, broken.as_bytes());
            let error = json_lines("input", reader, &mut |_| {}).expect_err("line 4 is cut");
            assert!(
                error.to_string().starts_with("input: line 4: invalid JSON"),
                "{error}"
            );
        }
    }

    #[test]
    fn json_lines_and_arrays() {
        let (kind, records) = collect(b"{\"a\":1}\n\n{\"a\":2}\n").expect("lines");
        assert_eq!((kind, records.len()), (InputKind::JsonLines, 2));
        let (kind, records) = collect(b"  [{\"a\":1},{\"a\":2},{\"a\":3}]").expect("array");
        assert_eq!(
            (kind, records[2].clone()),
            (InputKind::JsonArray, json!({"a": 3}))
        );
    }

    #[test]
    fn gzip_lines() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(b"{\"a\":1}\n{\"a\":2}\n").expect("write");
        let bytes = encoder.finish().expect("finish");
        let (kind, records) = collect(&bytes).expect("gzip");
        assert_eq!((kind, records.len()), (InputKind::GzipJsonLines, 2));
        let truncated = &bytes[..bytes.len() - 12];
        assert!(
            collect(truncated).is_err(),
            "a truncated gzip file is an error"
        );
    }

    #[test]
    fn bad_json_names_its_line() {
        let error = collect(b"{\"a\":1}\n{\"a\":\n").expect_err("invalid");
        assert!(
            error.to_string().contains("input: line 2: invalid JSON"),
            "{error}"
        );
        let error = collect(b"[{\"a\":1},").expect_err("invalid");
        assert!(error.to_string().contains("invalid JSON"), "{error}");
    }

    #[test]
    fn avro_container_files() {
        let schema = apache_avro::Schema::parse_str(
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":["null","string"]}]}"#,
        )
        .expect("schema");
        let mut writer = apache_avro::Writer::new(&schema, Vec::new()).expect("writer");
        for i in 0..3i64 {
            let mut record = apache_avro::types::Record::new(&schema).expect("record");
            record.put("a", i);
            record.put(
                "b",
                apache_avro::types::Value::Union(
                    1,
                    Box::new(apache_avro::types::Value::String("x".into())),
                ),
            );
            writer.append_value(record).expect("append");
        }
        let bytes = writer.into_inner().expect("file");
        let (kind, records) = collect(&bytes).expect("avro");
        assert_eq!(kind, InputKind::AvroContainer);
        assert_eq!(records[2], json!({"a": 2, "b": "x"}));
        let error = collect(&bytes[..bytes.len() / 2]).expect_err("truncated");
        assert!(error.to_string().contains("Avro"), "{error}");
    }

    #[test]
    fn zstd_lines() {
        let bytes = ruzstd::encoding::compress_to_vec(
            &b"{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let (kind, records) = collect(&bytes).expect("zstd");
        assert_eq!((kind, records.len()), (InputKind::ZstdJsonLines, 3));
        assert!(
            collect(&bytes[..6]).is_err(),
            "a truncated zstd file is an error"
        );
    }

    /// Writes a Parquet file with the crate's own writer: an id column and an optional label,
    /// null in every other row.
    fn parquet_file(path: &Path, rows: i64) {
        use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
        use parquet::file::writer::SerializedFileWriter;
        let schema = parquet::schema::parser::parse_message_type(
            "message instrument { REQUIRED INT64 id; OPTIONAL BINARY label (UTF8); }",
        )
        .expect("schema");
        let file = File::create(path).expect("create");
        let mut writer =
            SerializedFileWriter::new(file, std::sync::Arc::new(schema), Default::default())
                .expect("writer");
        let mut group = writer.next_row_group().expect("row group");
        let ids: Vec<i64> = (0..rows).collect();
        let mut column = group.next_column().expect("column").expect("id");
        column
            .typed::<Int64Type>()
            .write_batch(&ids, None, None)
            .expect("ids");
        column.close().expect("close");
        let levels: Vec<i16> = (0..rows).map(|i| i16::from(i % 2 == 0)).collect();
        let labels: Vec<ByteArray> = (0..rows)
            .filter(|i| i % 2 == 0)
            .map(|i| ByteArray::from(format!("l{i}").as_str()))
            .collect();
        let mut column = group.next_column().expect("column").expect("label");
        column
            .typed::<ByteArrayType>()
            .write_batch(&labels, Some(&levels), None)
            .expect("labels");
        column.close().expect("close");
        group.close().expect("close group");
        writer.close().expect("close file");
    }

    #[test]
    fn parquet_files_are_read_by_row() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("instruments.parquet");
        parquet_file(&path, 4);
        let mut records = Vec::new();
        let kind = read_file(&path, &mut |r| records.push(r.into_value())).expect("parquet");
        assert_eq!(kind, InputKind::Parquet);
        assert_eq!(records.len(), 4);
        assert_eq!(records[0], json!({"id": 0, "label": "l0"}));
        assert_eq!(records[1], json!({"id": 1, "label": null}));

        let bytes = std::fs::read(&path).expect("read");
        let error = collect(&bytes).expect_err("a stream");
        assert!(error.to_string().contains("name the file"), "{error}");
        let truncated = dir.path().join("truncated.parquet");
        std::fs::write(&truncated, &bytes[..bytes.len() - 20]).expect("write");
        let error = read_file(&truncated, &mut |_| {}).expect_err("truncated");
        assert!(
            error.to_string().contains("not a readable Parquet file"),
            "{error}"
        );
        let fake = dir.path().join("fake.parquet");
        std::fs::write(&fake, b"PAR1 but nothing else").expect("write");
        assert!(read_file(&fake, &mut |_| {}).is_err());
    }
}
