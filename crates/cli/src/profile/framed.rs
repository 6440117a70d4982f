//! Records from Kafka payloads in Confluent's wire format (magic byte, schema id, body),
//! decoded with the schema each names, fetched once per id from a registry.
//!
//! Two file layouts, since a topic dump must be binary-safe: `length-prefixed` is what
//! `kcat -C -t TOPIC -e -f '%R%s'` writes (a 4-byte big-endian length before each payload);
//! `base64-lines` is one base64 payload per line.

use crate::check::InvalidInput;
use crate::governance::Server;
use anyhow::{Context, Result};
use base64::Engine;
use covenant_engine::Reference;
use covenant_schema::{ParsedSchema, SchemaType};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::sync::Arc;

/// The largest payload a length prefix may announce; a larger one means the file is not in
/// this layout.
const MAX_PAYLOAD: usize = 64 * 1024 * 1024;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Framing {
    /// A 4-byte big-endian length before each payload (`kcat -f '%R%s'`).
    LengthPrefixed,
    /// One base64 payload per line.
    Base64Lines,
}

/// Fetches and parses writer schemas by id, each once.
pub struct Schemas {
    server: Server,
    runtime: tokio::runtime::Runtime,
    parsed: HashMap<i64, Arc<ParsedSchema>>,
}

impl Schemas {
    pub fn new(server: Server) -> Result<Schemas> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        Ok(Schemas {
            server,
            runtime,
            parsed: HashMap::new(),
        })
    }

    fn get(&self, path: &str) -> Result<Value> {
        let url = format!("{}{path}", self.server.url.trim_end_matches('/'));
        self.runtime
            .block_on(crate::samples::call(
                &self.server,
                reqwest::Method::GET,
                url,
                None,
            ))
            .map_err(|e| InvalidInput(format!("GET {path}: {e}")).into())
    }

    /// The writer schema of `id`, with its references resolved through the registry.
    pub fn schema(&mut self, id: i64) -> Result<Arc<ParsedSchema>> {
        if let Some(parsed) = self.parsed.get(&id) {
            return Ok(parsed.clone());
        }
        let answer = self.get(&format!("/schemas/ids/{id}"))?;
        let references = self.runtime.block_on(crate::references::resolve(
            &self.server,
            &answer["references"],
        ))?;
        let parsed = Arc::new(parse(&answer, &references).map_err(|e| {
            InvalidInput(format!("schema {id} from the registry does not parse: {e}"))
        })?);
        self.parsed.insert(id, parsed.clone());
        Ok(parsed)
    }
}

fn parse(answer: &Value, references: &[Reference]) -> Result<ParsedSchema, String> {
    let schema_type: SchemaType = answer["schemaType"].as_str().unwrap_or("AVRO").parse()?;
    let text = answer["schema"]
        .as_str()
        .ok_or("the answer has no schema")?;
    ParsedSchema::parse(schema_type, text, references).map_err(|e| e.to_string())
}

/// Streams the decoded payloads of `reader` (named `name` in errors) into `each`.
pub fn read(
    name: &str,
    reader: impl Read,
    framing: Framing,
    schemas: &mut Schemas,
    each: &mut dyn FnMut(Value),
) -> Result<()> {
    let mut decode = |index: usize, payload: &[u8]| -> Result<()> {
        let at = |message: String| InvalidInput(format!("{name}: payload {index}: {message}"));
        let (id, body) = covenant_policy::replay::split_confluent(payload).map_err(at)?;
        let writer = schemas.schema(id)?;
        let value = crate::check::without_limits(|m| {
            covenant_policy::replay::decode_framed_body(m, &writer, body)
        })?
        .map_err(|e| at(format!("does not decode with schema {id}: {e}")))?;
        each(value);
        Ok(())
    };
    let mut reader = BufReader::new(reader);
    match framing {
        Framing::LengthPrefixed => {
            let mut index = 0;
            while let Some(payload) = next_prefixed(&mut reader)
                .map_err(|e| InvalidInput(format!("{name}: payload {}: {e}", index + 1)))?
            {
                index += 1;
                decode(index, &payload)?;
            }
        }
        Framing::Base64Lines => {
            for (number, line) in reader.lines().enumerate() {
                let line =
                    line.map_err(|e| InvalidInput(format!("{name}: line {}: {e}", number + 1)))?;
                if line.trim().is_empty() {
                    continue;
                }
                let payload = base64::engine::general_purpose::STANDARD
                    .decode(line.trim())
                    .map_err(|e| {
                        InvalidInput(format!("{name}: line {}: not base64: {e}", number + 1))
                    })?;
                decode(number + 1, &payload)?;
            }
        }
    }
    Ok(())
}

/// The next length-prefixed payload, or `None` at a clean end of file.
fn next_prefixed(reader: &mut impl BufRead) -> Result<Option<Vec<u8>>, String> {
    if reader.fill_buf().map_err(|e| e.to_string())?.is_empty() {
        return Ok(None);
    }
    let mut prefix = [0u8; 4];
    reader
        .read_exact(&mut prefix)
        .map_err(|_| "the file ends inside a length prefix".to_string())?;
    let length = u32::from_be_bytes(prefix) as usize;
    if length > MAX_PAYLOAD {
        return Err(format!(
            "a length prefix of {length} bytes is past the {MAX_PAYLOAD}-byte bound; is this a '%R%s' dump?"
        ));
    }
    let mut payload = vec![0; length];
    reader
        .read_exact(&mut payload)
        .map_err(|e| match e.kind() {
            ErrorKind::UnexpectedEof => format!("the file ends inside a {length}-byte payload"),
            _ => e.to_string(),
        })?;
    Ok(Some(payload))
}
