//! `covenant samples add|list|rm`: manage the sample payloads a running registry replays on
//! every compatibility check of a subject.

use crate::check::InvalidInput;
use crate::output::outln;
use anyhow::{Context, Result};
use base64::Engine;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SamplesArgs {
    #[command(flatten)]
    pub server: crate::governance::Server,
    #[command(subcommand)]
    pub command: SamplesCommand,
}

#[derive(clap::Subcommand)]
pub enum SamplesCommand {
    /// Store a payload file as a sample of a subject version. It must decode with that version.
    Add {
        subject: String,
        /// A version number or `latest`.
        version: String,
        /// The payload, as the producer wrote it (binary).
        file: PathBuf,
        /// avro, protobuf, json or confluent (wire format with magic byte and schema id).
        #[arg(long, short = 'e')]
        encoding: String,
        /// Protobuf: the message's full name (needed without Confluent framing).
        #[arg(long)]
        message: Option<String>,
    },
    /// List a subject's samples (of one version when given).
    List {
        subject: String,
        version: Option<String>,
    },
    /// Remove one sample by id, or every sample of the version with --all.
    Rm {
        subject: String,
        version: String,
        id: Option<i64>,
        #[arg(long, conflicts_with = "id")]
        all: bool,
    },
}

pub(crate) fn encode_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// Sends one request; a registry error becomes a one-line message with its code (exit 2).
pub(crate) async fn call(
    server: &crate::governance::Server,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> Result<Value> {
    let client = server.client()?;
    let mut request = server.authorize(client.request(method, &url));
    if let Some(body) = body {
        request = request
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(body.to_string());
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("calling {url}"))?;
    let status = response.status();
    let text = response.text().await.context("reading the answer")?;
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if !status.is_success() {
        let message = value["message"].as_str().unwrap_or("no message");
        return Err(InvalidInput(format!(
            "the registry answered {} ({}): {message}",
            status.as_u16(),
            value["error_code"]
        ))
        .into());
    }
    Ok(value)
}

fn line(sample: &Value) -> String {
    let message = sample["messageName"]
        .as_str()
        .map(|m| format!(" {m}"))
        .unwrap_or_default();
    format!(
        "{:>6}  v{:<4} {:<10} {:>8} bytes{message}",
        sample["id"],
        sample["version"],
        sample["encoding"].as_str().unwrap_or("?"),
        sample["size"]
    )
}

pub fn run(args: SamplesArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: SamplesArgs) -> Result<ExitCode> {
    let base = format!(
        "{}/covenant/v1/subjects",
        args.server.url.trim_end_matches('/')
    );
    match args.command {
        SamplesCommand::Add {
            subject,
            version,
            file,
            encoding,
            message,
        } => {
            let bytes = std::fs::read(&file)
                .map_err(|e| InvalidInput(format!("{}: cannot read: {e}", file.display())))?;
            let mut body = json!({
                "payload": base64::engine::general_purpose::STANDARD.encode(&bytes),
                "encoding": encoding,
            });
            if let Some(m) = message {
                body["messageName"] = json!(m);
            }
            let url = format!(
                "{base}/{}/versions/{}/samples",
                encode_segment(&subject),
                encode_segment(&version)
            );
            let stored = call(&args.server, reqwest::Method::POST, url, Some(body)).await?;
            outln!("stored sample {}", line(&stored).trim_start());
        }
        SamplesCommand::List { subject, version } => {
            let url = match &version {
                Some(v) => format!(
                    "{base}/{}/versions/{}/samples",
                    encode_segment(&subject),
                    encode_segment(v)
                ),
                None => format!("{base}/{}/samples", encode_segment(&subject)),
            };
            let list = call(&args.server, reqwest::Method::GET, url, None).await?;
            let list = list.as_array().cloned().unwrap_or_default();
            if list.is_empty() {
                outln!("no samples");
            }
            for sample in &list {
                outln!("{}", line(sample));
            }
        }
        SamplesCommand::Rm {
            subject,
            version,
            id,
            all,
        } => {
            let mut url = format!(
                "{base}/{}/versions/{}/samples",
                encode_segment(&subject),
                encode_segment(&version)
            );
            match (id, all) {
                (Some(id), _) => url.push_str(&format!("/{id}")),
                (None, true) => {}
                (None, false) => {
                    return Err(InvalidInput("give a sample id or --all".into()).into());
                }
            }
            let removed = call(&args.server, reqwest::Method::DELETE, url, None).await?;
            outln!("removed {removed}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
