//! `covenant serve`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub listen: String,
    /// Folder of the embedded store.
    #[arg(long, default_value = "./covenant-data")]
    pub data_dir: std::path::PathBuf,
}

pub fn run(_args: ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the registry server is not available in this build")
}
