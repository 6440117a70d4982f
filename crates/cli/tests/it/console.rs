//! `covenant serve` serves the web console at `/ui` unless told `--no-ui`.

use crate::support;

use support::{Serve, wait_ready};

#[tokio::test]
async fn the_console_is_served_by_default_and_off_with_no_ui() {
    let dir = tempfile::tempdir().expect("temp dir");
    let http = covenant_exporter::client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");

    let on = Serve::spawn(&dir.path().join("on"), |_| {});
    wait_ready(&http, &on.base).await;
    let page = http
        .get(format!("{}/ui/subjects", on.base))
        .send()
        .await
        .expect("console page");
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let css = http
        .get(format!("{}/ui/assets/console.css", on.base))
        .send()
        .await
        .expect("stylesheet");
    assert_eq!(css.status(), 200, "assets are compiled into the binary");
    assert!(
        page.text()
            .await
            .expect("body")
            .contains("<h1>Subjects</h1>")
    );

    let off = Serve::spawn(&dir.path().join("off"), |c| {
        c.arg("--no-ui");
    });
    wait_ready(&http, &off.base).await;
    let gone = http
        .get(format!("{}/ui/subjects", off.base))
        .send()
        .await
        .expect("answer");
    assert_eq!(gone.status(), 404);
    assert!(gone.text().await.expect("body").contains("\"error_code\""));
}
