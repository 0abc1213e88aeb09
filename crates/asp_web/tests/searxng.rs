//! The SearXNG client and the cache against the loopback search server over the shipped
//! corpus: real HTTP, the server's own request counts as the witness.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use asp_web::{
    CachedSearch, SearchCategory, SearxngClient, SearxngSettings, WebError, WebQuery, WebSearch,
};
use asp_web_standin::{Corpus, WebStandIn};

async fn server() -> WebStandIn {
    let corpus = Corpus::load(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/concepts/corpus.yaml"),
    )
    .unwrap();
    WebStandIn::start("127.0.0.1:0".parse().unwrap(), corpus)
        .await
        .unwrap()
}

fn client(base_url: String, f: impl FnOnce(&mut SearxngSettings)) -> SearxngClient {
    let mut s = SearxngSettings {
        base_url,
        retry_backoff_s: 0.0,
        ..SearxngSettings::default()
    };
    f(&mut s);
    SearxngClient::new(s).unwrap()
}

fn general(text: &str) -> WebQuery {
    WebQuery::new(text, SearchCategory::General)
}

#[tokio::test]
async fn pages_about_a_named_concept_come_first() {
    let srv = server().await;
    let c = client(srv.base_url(), |s| s.max_results = 3);
    let hits = c.search(&general("the Moka Pot")).await.unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3, "{hits:?}");
    assert!(hits[0].title.to_lowercase().contains("moka"), "{hits:?}");
    assert!(hits[0].url.starts_with("https://"), "{hits:?}");
    assert!(!hits[0].content.is_empty());
    assert!(hits.iter().all(|h| h.image_url.is_none()));
    // a word the corpus never uses finds nothing, and that is no error
    assert!(
        c.search(&general("xylograph quux"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        c.search(&general("   ")).await,
        Err(WebError::InvalidRequest(_))
    ));
    assert_eq!(
        srv.searches(),
        2,
        "an empty query is refused before it is sent"
    );
}

#[tokio::test]
async fn image_results_download_as_pictures() {
    let srv = server().await;
    let c = client(srv.base_url(), |_| {});
    let hits = c
        .search(&WebQuery::new("totoro plush", SearchCategory::Images))
        .await
        .unwrap();
    assert!(hits.len() >= 2, "{hits:?}");
    let url = hits[0].image_url.clone().unwrap();
    let png = c.download(&url).await.unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let info = decoder.read_info().unwrap();
    assert!(info.info().width > 0 && info.info().height > 0);
    assert_eq!(srv.downloads(), 1);
    // only web addresses are fetched
    assert!(matches!(
        c.download("file:///etc/passwd").await,
        Err(WebError::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn a_server_fault_is_retried_once_then_reported() {
    let srv = server().await;
    let c = client(srv.base_url(), |s| s.retries = 1);
    srv.fail_next(1);
    assert!(!c.search(&general("moka pot")).await.unwrap().is_empty());
    assert_eq!(srv.searches(), 2, "one failure, one retry");
    srv.fail_next(2);
    let e = c.search(&general("moka pot")).await.unwrap_err();
    assert!(
        matches!(&e, WebError::Status { status: 503, endpoint, .. } if *endpoint == srv.base_url()),
        "{e:?}"
    );
    assert_eq!(srv.searches(), 4, "no third try");
}

#[tokio::test]
async fn a_request_error_is_not_retried() {
    let srv = server().await;
    // an instance address with a path the server does not serve: 404, the request's fault
    let c = client(format!("{}/nothing", srv.base_url()), |s| s.retries = 3);
    let e = c.search(&general("moka pot")).await.unwrap_err();
    assert!(matches!(e, WebError::Status { status: 404, .. }), "{e:?}");
    assert!(!e.retryable());
}

#[tokio::test]
async fn a_silent_server_is_given_up_on_after_the_timeout() {
    let srv = server().await;
    srv.delay_answers(Some(Duration::from_secs(30)));
    let c = client(srv.base_url(), |s| {
        s.timeout_s = 0.2;
        s.retries = 1;
    });
    let e = c.search(&general("moka pot")).await.unwrap_err();
    match &e {
        WebError::Unreachable { message, .. } => {
            assert!(message.contains("no answer within 0.2 s"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(srv.searches(), 2, "tried twice");
}

#[tokio::test]
async fn a_cached_search_makes_no_web_call_and_a_failed_one_writes_nothing() {
    let srv = server().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.redb");
    let open = || Arc::new(redb::Database::create(&path).unwrap());
    {
        let cached = CachedSearch::new(
            client(srv.base_url(), |s| s.retries = 0),
            open(),
            Duration::from_secs(3600),
        )
        .unwrap();
        // a failure is not remembered: the next search goes to the web again
        srv.fail_next(1);
        assert!(cached.search(&general("stanley cup")).await.is_err());
        let first = cached.search(&general("stanley cup")).await.unwrap();
        assert_eq!(srv.searches(), 2);
        // the same search, spelt differently: from the cache
        let again = cached.search(&general("  Stanley  CUP ")).await.unwrap();
        assert_eq!(again, first);
        assert_eq!(srv.searches(), 2);
        assert_eq!(cached.stats().hits, 1);
        assert_eq!(cached.stats().misses, 2);
        // images are another search
        cached
            .search(&WebQuery::new("stanley cup", SearchCategory::Images))
            .await
            .unwrap();
        assert_eq!(srv.searches(), 3);
    }
    // the database keeps it for the next run
    let cached = CachedSearch::new(
        client(srv.base_url(), |_| {}),
        open(),
        Duration::from_secs(3600),
    )
    .unwrap();
    assert!(
        !cached
            .search(&general("stanley cup"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(srv.searches(), 3);
    // an answer older than the cache's age limit is fetched again
    drop(cached);
    let stale = CachedSearch::new(client(srv.base_url(), |_| {}), open(), Duration::ZERO).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    stale.search(&general("stanley cup")).await.unwrap();
    assert_eq!(srv.searches(), 4);
}
