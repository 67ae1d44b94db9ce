//! /weather/{city}: fetch the upstream document through a pooled keep-alive client, parse it, answer a summary.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::{Deserialize, Serialize};

use crate::response::{Response, Status, JSON};

/// A stuck upstream becomes a 502 instead of a request that never ends.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// The parts of the upstream document we use; serde skips the rest.
#[derive(Deserialize)]
struct Report {
    weather: Vec<Condition>,
    main: Readings,
}

#[derive(Deserialize)]
struct Condition {
    id: i64,
}

#[derive(Deserialize)]
struct Readings {
    temp: f64,
}

#[derive(Serialize)]
struct Summary {
    code: i64,
    temp: i64,
}

#[derive(Serialize)]
struct Failure<'a> {
    error: &'a str,
}

/// hyper's pooled client, one per event loop: its connections to the upstream live on that loop and are
/// reused across requests (HTTP/1.1 keep-alive).
pub struct Upstream {
    client: Client<HttpConnector, Empty<Bytes>>,
    url: Uri,
}

impl Upstream {
    pub fn new(url: Uri) -> Upstream {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            // Needed for the pool to expire idle connections.
            .pool_timer(TokioTimer::new())
            .build(connector);
        Upstream { client, url }
    }

    pub async fn current_weather(&self) -> Response {
        let outcome = match tokio::time::timeout(UPSTREAM_TIMEOUT, self.fetch_summary()).await {
            Ok(outcome) => outcome,
            Err(_) => Err("upstream timed out".to_owned()),
        };
        match outcome {
            Ok(summary) => Response::new(Status::Ok, JSON, to_json(&summary)),
            Err(error) => Response::new(
                Status::BadGateway,
                JSON,
                to_json(&Failure { error: &error }),
            ),
        }
    }

    async fn fetch_summary(&self) -> Result<Summary, String> {
        let response = self
            .client
            .get(self.url.clone())
            .await
            .map_err(|e| format!("upstream request failed: {}", with_causes(&e)))?;
        if !response.status().is_success() {
            return Err(format!("upstream answered {}", response.status()));
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("upstream body failed: {e}"))?
            .to_bytes();
        let report: Report =
            serde_json::from_slice(&body).map_err(|e| format!("bad upstream document: {e}"))?;
        let condition = report
            .weather
            .first()
            .ok_or("upstream document has no weather entry")?;
        Ok(Summary {
            code: condition.id,
            // The integer part: truncation towards zero, also for temperatures below zero.
            temp: report.main.temp.trunc() as i64,
        })
    }
}

/// "client error (Connect): tcp connect error: Connection refused (os error 111)" rather than just the outer layer.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("plain structs always serialize")
}
