//! Outgoing HTTP. Every HTTP client Covenant builds comes from here: an exporter's, the
//! command line's calls to a registry, a JWKS fetch, and those of the tests and benchmarks
//! (`clippy.toml` forbids building one any other way).
//!
//! TLS is rustls with ring, the provider the server's own TLS uses: no second cryptography
//! library (reqwest's default provider would compile aws-lc, a C library) and no OpenSSL to
//! load at start, which took about 1.5 ms of every `covenant` process, a command that never
//! connects anywhere included. Servers are verified against the system's certificate
//! authorities (`SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured) and any added with
//! `add_root_certificate`.

/// A `reqwest` client builder with Covenant's TLS.
#[allow(clippy::disallowed_methods)]
pub fn builder() -> reqwest::ClientBuilder {
    // reqwest takes the process's default provider; a second install is refused, harmlessly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Named, not left to reqwest's default: a test build also links OpenSSL (through a
    // client under test), and the tests must exercise the TLS the registry ships with.
    reqwest::Client::builder().tls_backend_rustls()
}

/// A client with default settings.
///
/// # Panics
/// As `reqwest::Client::new` does, when TLS cannot be set up: no certificate authority could
/// be read from the system. For tests and benchmarks; the registry's own clients use
/// [`builder`] and report the error.
pub fn client() -> reqwest::Client {
    builder()
        .build()
        .expect("an HTTP client (are the system's CA certificates installed?)")
}
