//! Watch semantics ("Efficient detection of changes" in the API concepts, `storage/cacher`).

use std::time::Duration;

use fake_apiserver::{FakeApiServer, Fault, Verb};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

use crate::common::{config_map, server};

async fn next<S, T>(stream: &mut S) -> T
where
    S: futures::Stream<Item = T> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an event within 5s")
        .expect("stream still open")
}

fn name_of(ev: &WatchEvent<ConfigMap>) -> (&'static str, String) {
    match ev {
        WatchEvent::Added(o) => ("ADDED", o.metadata.name.clone().unwrap()),
        WatchEvent::Modified(o) => ("MODIFIED", o.metadata.name.clone().unwrap()),
        WatchEvent::Deleted(o) => ("DELETED", o.metadata.name.clone().unwrap()),
        WatchEvent::Bookmark(_) => ("BOOKMARK", String::new()),
        WatchEvent::Error(e) => panic!("unexpected error event {e:?}"),
    }
}

/// A watch from a `resourceVersion` sees exactly the changes after it, in order, as
/// ADDED, MODIFIED and DELETED.
#[tokio::test]
async fn watch_from_a_resource_version_replays_later_changes() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let before = api
        .create(&PostParams::default(), &config_map("old", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("w", &[]))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();

    let rv = before.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(name_of(&next(&mut stream).await.unwrap()));
    }
    assert_eq!(
        seen,
        [
            ("ADDED", "w".into()),
            ("MODIFIED", "w".into()),
            ("DELETED", "w".into())
        ]
    );

    api.create(&PostParams::default(), &config_map("live", &[]))
        .await
        .unwrap();
    assert_eq!(
        name_of(&next(&mut stream).await.unwrap()),
        ("ADDED", "live".into())
    );
}

/// Label and field selectors filter a watch; an object that stops matching is a DELETED
/// event for that watch, one that starts matching an ADDED event.
#[tokio::test]
async fn watch_selectors_and_transitions() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let start = api
        .create(&PostParams::default(), &config_map("x", &[]))
        .await
        .unwrap();
    let rv = start.metadata.resource_version.unwrap();
    let mut by_label = api
        .watch(
            &WatchParams::default()
                .labels("opcat.dev/managed=true")
                .disable_bookmarks(),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let mut by_name = api
        .watch(
            &WatchParams::default()
                .fields("metadata.name=y")
                .disable_bookmarks(),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let managed = json!({"metadata": {"labels": {"opcat.dev/managed": "true"}}});
    let unmanaged = json!({"metadata": {"labels": {"opcat.dev/managed": null}}});
    api.patch("x", &PatchParams::default(), &Patch::Merge(&managed))
        .await
        .unwrap();
    api.patch("x", &PatchParams::default(), &Patch::Merge(&unmanaged))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("y", &[]))
        .await
        .unwrap();
    assert_eq!(
        name_of(&next(&mut by_label).await.unwrap()),
        ("ADDED", "x".into())
    );
    assert_eq!(
        name_of(&next(&mut by_label).await.unwrap()),
        ("DELETED", "x".into())
    );
    assert_eq!(
        name_of(&next(&mut by_name).await.unwrap()),
        ("ADDED", "y".into())
    );
}

/// With `allowWatchBookmarks` an idle watch receives BOOKMARK events carrying the current
/// `resourceVersion`; without `resourceVersion` the watch starts with the current state as
/// ADDED events.
#[tokio::test]
async fn bookmarks_and_initial_state() {
    let server = FakeApiServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .build();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &config_map("there", &[]))
        .await
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(
        name_of(&next(&mut stream).await.unwrap()),
        ("ADDED", "there".into())
    );
    match next(&mut stream).await.unwrap() {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata.resource_version,
                server.resource_version().to_string()
            );
        }
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

/// A watch from a `resourceVersion` older than the retained window gets an ERROR event with
/// 410 Expired ("too old resource version"), and `kube::runtime::watcher` answers by
/// re-listing.
#[tokio::test]
async fn too_old_resource_version_is_gone_and_watcher_relists() {
    let server = FakeApiServer::builder().watch_history(2).build();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let first = api
        .create(&PostParams::default(), &config_map("c0", &[]))
        .await
        .unwrap();
    for i in 1..5 {
        api.create(&PostParams::default(), &config_map(&format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    let rv = first.metadata.resource_version.unwrap();
    let mut raw = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match next(&mut raw).await.unwrap() {
        WatchEvent::Error(e) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert!(
                e.message.starts_with("too old resource version"),
                "{}",
                e.message
            );
        }
        other => panic!("expected 410, got {other:?}"),
    }

    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut listed = 0;
    loop {
        match next(&mut events).await.unwrap() {
            watcher::Event::InitApply(_) => listed += 1,
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(listed, 5);
    // The next watch fails to start; while the watcher waits, the window moves past it.
    server.inject_failure(Fault::new(503).verb(Verb::Watch));
    assert!(next(&mut events).await.is_err());
    for i in 5..10 {
        api.create(&PostParams::default(), &config_map(&format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    let gone = next(&mut events).await;
    assert!(
        matches!(&gone, Err(watcher::Error::WatchError(e)) if e.code == 410),
        "{gone:?}"
    );
    let mut relisted = 0;
    loop {
        match next(&mut events).await.unwrap() {
            watcher::Event::InitApply(_) => relisted += 1,
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(relisted, 10);
}

/// Streaming lists (`sendInitialEvents=true`): the initial state as ADDED events, then a
/// BOOKMARK annotated `k8s.io/initial-events-end` (KEP-3157), which `kube::runtime::watcher`
/// turns into `InitDone`.
#[tokio::test]
async fn streaming_lists_end_with_the_initial_events_bookmark() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &config_map("s1", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("s2", &[]))
        .await
        .unwrap();
    let mut events = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut names = Vec::new();
    loop {
        match next(&mut events).await.unwrap() {
            watcher::Event::InitApply(o) => names.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(names, ["s1", "s2"]);
    api.create(&PostParams::default(), &config_map("s3", &[]))
        .await
        .unwrap();
    match next(&mut events).await.unwrap() {
        watcher::Event::Apply(o) => assert_eq!(o.metadata.name.as_deref(), Some("s3")),
        other => panic!("{other:?}"),
    }
}

/// `timeoutSeconds` ends the watch (the server closes the stream).
#[tokio::test]
async fn timeout_seconds_ends_the_stream() {
    let (_server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let stream = api
        .watch(&WatchParams::default().timeout(1).disable_bookmarks(), "0")
        .await
        .unwrap();
    let all: Vec<_> = tokio::time::timeout(Duration::from_secs(5), stream.try_collect::<Vec<_>>())
        .await
        .expect("stream ended within 5s")
        .unwrap();
    assert!(all.is_empty());
}

/// A watch lag (a test control) delivers each event that long after it happened, in order,
/// while reads see the change at once: what a client's cache lagging its own writes looks like.
#[tokio::test]
async fn a_watch_lag_delays_events_but_not_reads() {
    let (server, client) = server();
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let lag = Duration::from_secs(1);
    server.set_watch_lag("configmaps", lag);
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    let start = tokio::time::Instant::now();
    api.create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", &[]))
        .await
        .unwrap();
    assert!(
        api.get_opt("b").await.unwrap().is_some(),
        "reads are not lagged"
    );
    let first = next(&mut stream).await.unwrap();
    assert!(
        start.elapsed() >= lag,
        "delivered after {:?}",
        start.elapsed()
    );
    assert_eq!(name_of(&first), ("ADDED", "a".to_owned()));
    assert_eq!(
        name_of(&next(&mut stream).await.unwrap()),
        ("ADDED", "b".to_owned())
    );

    server.set_watch_lag("configmaps", Duration::ZERO);
    let again = tokio::time::Instant::now();
    api.create(&PostParams::default(), &config_map("c", &[]))
        .await
        .unwrap();
    assert_eq!(
        name_of(&next(&mut stream).await.unwrap()),
        ("ADDED", "c".to_owned())
    );
    assert!(
        again.elapsed() < lag,
        "no lag once cleared: {:?}",
        again.elapsed()
    );
}
