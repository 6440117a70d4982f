//! `covenant auth ...` (manage an auth file) and the authentication flags of `covenant serve`,
//! including the safe defaults: no unauthenticated listening beyond loopback unless asked.

use anyhow::{Context, bail};
use covenant_http::auth::{
    Auth, AuthFile, AuthSettings, FailureLimit, JwtSettings, JwtVerifier, Operation,
};
use covenant_http::tls::{Tls, TlsSettings};
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(clap::Subcommand)]
enum AuthCommand {
    /// Add a user, or set an existing user's password (scrypt with a random salt).
    AddUser {
        file: PathBuf,
        user: String,
        /// Read the password from the first line of standard input.
        #[arg(long, required = true)]
        password_stdin: bool,
        /// Roles the user carries (grants can name roles; Covenant extension).
        #[arg(long = "role")]
        roles: Vec<String>,
    },
    /// Grant OPERATION (Read, Write, Delete, Govern, Approve, Admin) on RESOURCE (`Config:`,
    /// `Subject:<regex>` or `SubjectPrefix:<text>`) to USER.
    Grant {
        file: PathBuf,
        user: String,
        operation: String,
        resource: String,
    },
    /// Remove a grant given with `grant`.
    Revoke {
        file: PathBuf,
        user: String,
        operation: String,
        resource: String,
    },
    /// Validate the file and list each user's rights.
    Check { file: PathBuf },
}

pub fn run(args: AuthArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        AuthCommand::AddUser {
            file,
            user,
            roles,
            password_stdin: _,
        } => {
            let mut auth = AuthFile::load_or_new(&file)?;
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .context("reading the password from standard input")?;
            let password = line.trim_end_matches(['\r', '\n']);
            auth.set_password(&user, password)?;
            if let Some(entry) = auth.users.iter_mut().find(|u| u.username == user) {
                for role in roles {
                    if !entry.roles.contains(&role) {
                        entry.roles.push(role);
                    }
                }
            }
            auth.save(&file)?;
            eprintln!("user {user} saved in {}", file.display());
        }
        AuthCommand::Grant {
            file,
            user,
            operation,
            resource,
        } => {
            let mut auth = AuthFile::load_or_new(&file)?;
            auth.grant(&user, &operation, &resource)?;
            auth.save(&file)?;
        }
        AuthCommand::Revoke {
            file,
            user,
            operation,
            resource,
        } => {
            let mut auth = AuthFile::load(&file)?;
            if !auth.revoke(&user, &operation, &resource)? {
                bail!("{user} has no grant of {operation} on {resource}");
            }
            auth.save(&file)?;
        }
        AuthCommand::Check { file } => {
            let auth = AuthFile::load(&file)?;
            for line in auth.describe() {
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How `covenant serve` authenticates callers.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeAuthArgs {
    /// Users and permissions (Karapace's `registry_authfile` format, or written by
    /// `covenant auth`); HTTP Basic. Re-read when it changes.
    #[arg(long, value_name = "FILE", env = "COVENANT_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,
    /// Bearer JWTs verified against this JWKS file (re-read every --jwks-refresh-seconds).
    #[arg(long, value_name = "FILE", env = "COVENANT_JWKS_FILE")]
    pub jwks_file: Option<PathBuf>,
    /// Bearer JWTs verified against the JWKS at this http:// or https:// URL, fetched at
    /// start and every --jwks-refresh-seconds (never per request).
    #[arg(
        long,
        value_name = "URL",
        env = "COVENANT_JWKS_URL",
        conflicts_with = "jwks_file"
    )]
    pub jwks_url: Option<String>,
    #[arg(long, default_value_t = 300)]
    pub jwks_refresh_seconds: u64,
    /// Required `iss` of tokens.
    #[arg(long, env = "COVENANT_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Required `aud` of tokens.
    #[arg(long, env = "COVENANT_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
    /// The claim naming the principal (dotted path).
    #[arg(long, default_value = "sub")]
    pub jwt_principal_claim: String,
    /// The claim carrying the principal's roles (dotted path).
    #[arg(long, default_value = "roles")]
    pub jwt_roles_claim: String,
    /// Serve callers without credentials: required to listen beyond loopback without
    /// authentication; with authentication, anonymous callers may Read (or what
    /// --anonymous-operations lists).
    #[arg(long)]
    pub allow_anonymous: bool,
    /// Host names (as clients write them in the URL) served to callers without credentials,
    /// besides loopback names and IP addresses, which are always served; repeatable. Any
    /// other `Host` is refused whenever callers without credentials may act, so a web page
    /// cannot use DNS rebinding to act as one.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// With authentication, operations callers without credentials may perform
    /// (comma-separated: read,write,delete,govern,admin).
    #[arg(long, value_delimiter = ',', value_name = "OPERATIONS")]
    pub anonymous_operations: Vec<String>,
    /// Failed logins allowed per source address per minute before it is refused (429).
    #[arg(long, default_value_t = 10)]
    pub max_failed_logins: u32,
    /// Serve HTTPS with this certificate chain (PEM); reloaded on SIGHUP or when it changes.
    #[arg(
        long,
        value_name = "FILE",
        env = "COVENANT_TLS_CERT",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(
        long,
        value_name = "FILE",
        env = "COVENANT_TLS_KEY",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Accept client certificates signed by this CA (PEM); a certificate's subject CN is the
    /// principal, granted rights by username in the auth file.
    #[arg(
        long,
        value_name = "FILE",
        env = "COVENANT_TLS_CLIENT_CA",
        requires = "tls_cert"
    )]
    pub tls_client_ca: Option<PathBuf>,
    /// Map a client certificate to its principal with the first capture group of this regex,
    /// matched against the subject as `CN=...,O=...` (RFC 4514); default: the CN.
    #[arg(long, value_name = "REGEX", requires = "tls_client_ca")]
    pub tls_principal_pattern: Option<String>,
}

impl ServeAuthArgs {
    fn enabled(&self) -> bool {
        self.auth_file.is_some()
            || self.jwks_file.is_some()
            || self.jwks_url.is_some()
            || self.tls_client_ca.is_some()
    }

    /// The TLS configuration, read now and then watched for changes and SIGHUP.
    pub fn tls(&self) -> anyhow::Result<Option<Arc<Tls>>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let principal_pattern = match &self.tls_principal_pattern {
            Some(p) => Some(regex::Regex::new(p).context("--tls-principal-pattern")?),
            None => None,
        };
        let tls = Arc::new(Tls::load(TlsSettings {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: self.tls_client_ca.clone(),
            principal_pattern,
        })?);
        tls.clone().watch(Duration::from_secs(5));
        Ok(Some(tls))
    }
}

/// The authentication layer for a server bound to `address`, applying the safe defaults.
pub async fn layer(args: &ServeAuthArgs, address: SocketAddr) -> anyhow::Result<Auth> {
    let enabled = args.enabled();
    if !enabled && !address.ip().is_loopback() {
        if !args.allow_anonymous {
            bail!(
                "refusing to serve {address} without authentication: give --auth-file, \
                 --jwks-file/--jwks-url or --tls-client-ca, or --allow-anonymous to let anyone who can connect \
                 change or delete every schema"
            );
        }
        tracing::warn!(%address, "serving WITHOUT authentication beyond loopback (--allow-anonymous)");
    }
    let anonymous_operations = anonymous_operations(args, enabled)?;
    let settings = AuthSettings {
        auth_file: args.auth_file.clone(),
        jwt: jwt_verifier(args).await?,
        client_certificates: args.tls_client_ca.is_some(),
        anonymous_operations,
        loopback_hosts_only: true,
        allowed_hosts: args.allowed_hosts.clone(),
        denial_hook: None,
        failure_limit: FailureLimit {
            max_failures: args.max_failed_logins,
            window: Duration::from_secs(60),
        },
        reload_interval: None,
    };
    Ok(Auth::new(settings)?)
}

fn anonymous_operations(args: &ServeAuthArgs, enabled: bool) -> anyhow::Result<Vec<Operation>> {
    let mut ops = args
        .anonymous_operations
        .iter()
        .map(|o| Operation::parse(o))
        .collect::<Result<Vec<_>, _>>()?;
    if !enabled {
        if !ops.is_empty() {
            bail!("--anonymous-operations needs --auth-file or --jwks-file/--jwks-url");
        }
        return Ok(ops);
    }
    if ops.is_empty() && args.allow_anonymous {
        ops.push(Operation::Read);
    }
    if !ops.is_empty() {
        let names: Vec<&str> = ops.iter().map(|o| o.name()).collect();
        tracing::warn!(operations = %names.join(","), "callers without credentials are allowed");
    }
    Ok(ops)
}

/// Reads the key set from the file or URL once now, then refreshes it in the background.
async fn jwt_verifier(args: &ServeAuthArgs) -> anyhow::Result<Option<Arc<JwtVerifier>>> {
    let source = match (&args.jwks_file, &args.jwks_url) {
        (Some(file), _) => KeySource::File(file.clone()),
        (None, Some(url)) => KeySource::Url(url.clone()),
        (None, None) => return Ok(None),
    };
    let settings = JwtSettings {
        issuer: args.jwt_issuer.clone(),
        audience: args.jwt_audience.clone(),
        principal_claim: args.jwt_principal_claim.clone(),
        roles_claim: args.jwt_roles_claim.clone(),
    };
    let jwks = source.read().await?;
    let verifier = Arc::new(JwtVerifier::new(settings, &jwks).context("the JWKS")?);
    let refreshed = Arc::downgrade(&verifier);
    let every = Duration::from_secs(args.jwks_refresh_seconds.max(1));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(verifier) = refreshed.upgrade() else {
                return;
            };
            match source.read().await.map(|jwks| verifier.replace_keys(&jwks)) {
                Ok(Ok(())) => tracing::debug!("JWKS refreshed"),
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "JWKS not refreshed; keeping the last one")
                }
                Err(e) => tracing::warn!(error = %e, "JWKS not refreshed; keeping the last one"),
            }
        }
    });
    Ok(Some(verifier))
}

enum KeySource {
    File(PathBuf),
    Url(String),
}

impl KeySource {
    async fn read(&self) -> anyhow::Result<String> {
        match self {
            KeySource::File(path) => std::fs::read_to_string(path)
                .with_context(|| format!("reading the JWKS {}", path.display())),
            KeySource::Url(url) => {
                let response = covenant_exporter::client::builder()
                    .timeout(Duration::from_secs(10))
                    .build()?
                    .get(url)
                    .send()
                    .await
                    .with_context(|| format!("fetching the JWKS {url}"))?
                    .error_for_status()?;
                Ok(response.text().await?)
            }
        }
    }
}
