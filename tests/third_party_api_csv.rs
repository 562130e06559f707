//! Real ClusterServiceVersions from public bundles (the shared third-party data set) round-trip
//! through opcat's type without losing a field. The same behaviour is covered on our own
//! fixtures by `tests/api_csv.rs`.
// Test helpers outside #[test] functions panic on purpose: a failed expectation is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod api_support;

use api_support::{files_under, round_trip_losses, yaml_document};
use opcat::api::ClusterServiceVersion;

#[test]
fn third_party_csvs_round_trip_losslessly() {
    let csvs = files_under(&test_registry::shared_data_dir().join("bundles"), &|name| {
        name.contains("clusterserviceversion")
            && (name.ends_with(".yaml") || name.ends_with(".yml"))
    });
    assert!(
        csvs.len() >= 10,
        "expected the shared bundles, found {} CSVs",
        csvs.len()
    );
    let mut failures = Vec::new();
    for path in &csvs {
        let original = yaml_document(path);
        match round_trip_losses::<ClusterServiceVersion>(&original) {
            Ok(losses) if losses.is_empty() => {}
            Ok(losses) => failures.push(format!("{}: {losses:#?}", path.display())),
            Err(error) => {
                failures.push(format!("{}: does not deserialize: {error}", path.display()))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} CSVs changed:\n{}",
        failures.len(),
        csvs.len(),
        failures.join("\n")
    );
}
