use super::*;

const ADDRESS: &str = "10.244.0.7:50051";
const CHECK: Duration = Duration::from_secs(10);

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

fn read_at(seconds: i64) -> Tracked {
    Tracked {
        uid: None,
        source: ADDRESS.to_owned(),
        secrets: Vec::new(),
        last_connect: at(seconds),
        last_poll: Some(at(seconds)),
        last_check: Some(at(seconds)),
        failure: None,
    }
}

fn failing(retry_at: i64) -> Tracked {
    Tracked {
        failure: Some(Failure {
            ready_reason: READY_REASON_SERVER_UNREACHABLE,
            kind: "unreachable",
            message: "catalog server 10.244.0.7:50051 cannot be reached".to_owned(),
            retry_at: at(retry_at),
        }),
        ..read_at(0)
    }
}

fn decide_at(tracked: Option<&Tracked>, every: Option<Duration>, now: i64) -> ServerDecision {
    decide(tracked, ADDRESS, every, CHECK, at(now))
}

#[test]
fn the_first_look_and_a_new_address_read_the_whole_catalog() {
    assert_eq!(
        decide_at(None, None, 0),
        ServerDecision::Read(Why::FirstLoad)
    );
    assert_eq!(
        decide(Some(&read_at(0)), "10.244.0.9:50051", None, CHECK, at(1)),
        ServerDecision::Read(Why::SourceChanged)
    );
}

#[test]
fn a_healthy_server_is_checked_every_interval_and_read_when_the_poll_is_due() {
    let tracked = read_at(0);
    assert_eq!(
        decide_at(Some(&tracked), None, 5),
        ServerDecision::Wait {
            until: Some(at(10))
        }
    );
    assert_eq!(decide_at(Some(&tracked), None, 10), ServerDecision::Check);
    let checked = Tracked {
        last_check: Some(at(10)),
        ..tracked.clone()
    };
    assert_eq!(
        decide_at(Some(&checked), Some(Duration::from_secs(15)), 11),
        ServerDecision::Wait {
            until: Some(at(15))
        },
        "the next poll comes before the next check"
    );
    assert_eq!(
        decide_at(Some(&checked), Some(Duration::from_secs(15)), 15),
        ServerDecision::Read(Why::PollDue)
    );
}

#[test]
fn a_failing_server_is_read_again_at_its_fixed_retry_and_not_checked_before() {
    assert_eq!(
        decide_at(Some(&failing(20)), None, 15),
        ServerDecision::Wait {
            until: Some(at(20))
        }
    );
    assert_eq!(
        decide_at(Some(&failing(20)), None, 20),
        ServerDecision::Read(Why::Retry)
    );
}

#[test]
fn read_errors_give_the_ready_reason() {
    let unreachable = ReadError::Client(ClientError::Unreachable {
        address: ADDRESS.to_owned(),
        detail: "connection refused".to_owned(),
    });
    assert_eq!(unreachable.ready_reason(), READY_REASON_SERVER_UNREACHABLE);
    let invalid = ReadError::Invalid {
        address: ADDRESS.to_owned(),
        summary: "package \"x\" has no channels".to_owned(),
    };
    assert_eq!(invalid.ready_reason(), READY_REASON_CATALOG_INVALID);
    assert_eq!(
        invalid.to_string(),
        "the catalog served at 10.244.0.7:50051 is not a valid file-based catalog: package \"x\" has no channels"
    );
    let call = ReadError::Client(ClientError::Call {
        address: ADDRESS.to_owned(),
        method: "ListBundles",
        detail: "Internal: boom".to_owned(),
    });
    assert_eq!(call.ready_reason(), READY_REASON_SERVER_FAILED);
}
