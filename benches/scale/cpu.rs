//! CPU time of the three parties, from `/proc`: the controller process (`/proc/<pid>/stat`), the
//! registry process (the same) and the in-memory API server, which runs on its own Tokio runtime
//! inside this process, on threads named by [`api_thread_name`] (`/proc/self/task/<tid>/stat`).
//! Everything the API server does — routing, storage, its emulated controllers, watch fan-out,
//! serialising responses — runs on those threads; the benchmark's own polling runs on the other
//! runtime and is not counted. Each run has its own runtime with its own thread name, so the
//! threads of an earlier run's runtime, which may still be exiting, are never counted.

use std::time::Duration;

/// Name of the threads of run `run`'s API server runtime (the kernel keeps 15 bytes of it).
pub fn api_thread_name(run: usize) -> String {
    format!("fake-api-{run}")
}

/// Clock ticks per second of `utime`/`stime` (`getconf CLK_TCK`; 100 on Linux everywhere).
const TICKS_PER_SECOND: u64 = 100;

/// CPU time (user + system) of the three parties at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cpu {
    pub controller: Duration,
    pub api_server: Duration,
    pub registry: Duration,
}

/// Whose CPU time is measured: two processes and this process's API server threads.
#[derive(Clone, Debug)]
pub struct Parties {
    pub controller: u32,
    pub registry: u32,
    /// [`api_thread_name`] of this run.
    pub api_threads: String,
}

impl Cpu {
    /// Now.
    pub fn now(parties: &Parties) -> Self {
        Self {
            controller: ticks(&format!("/proc/{}/stat", parties.controller)).unwrap_or_default(),
            api_server: threads_named(&parties.api_threads),
            registry: ticks(&format!("/proc/{}/stat", parties.registry)).unwrap_or_default(),
        }
    }

    /// What was spent from `earlier` to `self`.
    pub fn since(&self, earlier: &Cpu) -> Cpu {
        Cpu {
            controller: self.controller.saturating_sub(earlier.controller),
            api_server: self.api_server.saturating_sub(earlier.api_server),
            registry: self.registry.saturating_sub(earlier.registry),
        }
    }
}

fn threads_named(name: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .filter_map(|task| ticks(&task.path().join("stat").to_string_lossy()))
        .sum()
}

/// `utime + stime` of a `stat` file. The command name (field 2) may hold spaces: fields are
/// counted after its closing parenthesis.
fn ticks(path: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(path).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SECOND,
    ))
}
