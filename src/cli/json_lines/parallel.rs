//! The JSON-lines protocol on several threads, for commands whose answer to a line depends on
//! that line alone (`classify`; not `recover`, whose sessions carry state from line to line).
//!
//! One thread reads the inputs and cuts them into batches of lines; worker threads answer
//! batches; the calling thread writes the answers in input order. Everything the protocol
//! promises holds as in [`super::run`]: one answer per line, in order, error objects in the place
//! of bad lines, the same messages on standard error and the same exit code.
//!
//! Two rules keep it a protocol, not only a batch job:
//! - **Latency.** A batch is handed over as soon as the reader has no more input buffered (the
//!   next read could wait on the writer of a pipe), so a co-process that writes one line and
//!   waits gets its answer, flushed, without waiting for a batch to fill.
//! - **Memory.** The bytes of lines read but not yet answered and written stay under
//!   [`IN_FLIGHT_BYTES`], or one line when a single line is longer: the reader waits for the
//!   writer before it reads on. Each thread also holds the working memory of classifying its line.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use super::{
    Answered, Answers, Exit, Input, Read, STDIN, answer_line, err, line_buffered, open, read_line,
    write_failed,
};

/// Input bytes that may be read ahead of the answers written (see the module docs).
pub const IN_FLIGHT_BYTES: usize = 16 << 20;

/// A batch ends at this many bytes of lines, or lines, even while more input is buffered.
const BATCH_BYTES: usize = 256 << 10;
const BATCH_LINES: usize = 1024;

/// Lines of one input, numbered from `first_number`, in the order read.
struct Batch {
    sequence: u64,
    input: Arc<str>,
    first_number: usize,
    /// Each line's bytes; `None` for a line over [`super::MAX_LINE_BYTES`], skipped unread.
    lines: Vec<Option<Vec<u8>>>,
    bytes: usize,
}

/// A batch answered: its lines' outputs, in order.
struct AnsweredBatch {
    sequence: u64,
    input: Arc<str>,
    first_number: usize,
    answers: Vec<Answered>,
    bytes: usize,
}

/// The bytes read but not yet written, shared by the reader (who waits for room) and the
/// writer (who makes room, and closes it when it stops, so the reader stops too).
struct InFlight {
    state: Mutex<InFlightState>,
    room: Condvar,
    /// At most this many bytes, unless one batch alone is larger.
    limit: usize,
}

#[derive(Default)]
struct InFlightState {
    bytes: usize,
    closed: bool,
    /// A worker stopped in the middle of a batch: its answers will never come.
    broken: bool,
}

impl InFlight {
    fn new(limit: usize) -> InFlight {
        InFlight {
            state: Mutex::default(),
            room: Condvar::new(),
            limit,
        }
    }

    /// Waits until `bytes` more fit (always, when nothing is in flight); `false` once closed.
    fn acquire(&self, bytes: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while !state.closed && state.bytes > 0 && state.bytes.saturating_add(bytes) > self.limit {
            state = self
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.closed {
            return false;
        }
        state.bytes = state.bytes.saturating_add(bytes);
        true
    }

    fn release(&self, bytes: usize) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.bytes = state.bytes.saturating_sub(bytes);
        self.room.notify_all();
    }

    fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        self.room.notify_all();
    }

    /// Closes the flight because a batch will never be answered.
    fn break_down(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .broken = true;
        self.close();
    }

    fn is_broken(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .broken
    }
}

/// Closes the flight when the writer stops, however it stops.
struct CloseOnDrop(Arc<InFlight>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Answers every line of `inputs` like [`super::run`], on `jobs` worker threads, each with its
/// own clone of `answers`.
pub fn run<A>(inputs: &[PathBuf], answers: A, jobs: NonZeroUsize) -> Exit
where
    A: Answers + Clone + Send + 'static,
{
    run_within(inputs, answers, jobs, IN_FLIGHT_BYTES)
}

/// [`run`] with `limit` bytes in flight.
fn run_within<A>(inputs: &[PathBuf], answers: A, jobs: NonZeroUsize, limit: usize) -> Exit
where
    A: Answers + Clone + Send + 'static,
{
    let opened = match open(inputs) {
        Ok(opened) => opened,
        Err(exit) => return exit,
    };
    let subject = answers.subject();
    let in_flight = Arc::new(InFlight::new(limit));
    let _close = CloseOnDrop(Arc::clone(&in_flight));
    let (work, to_do) = mpsc::channel::<Batch>();
    let (done, answered) = mpsc::channel::<AnsweredBatch>();
    let to_do = Arc::new(Mutex::new(to_do));

    let reading = {
        let in_flight = Arc::clone(&in_flight);
        std::thread::Builder::new()
            .name("faultline-read".to_owned())
            .spawn(move || read_batches(opened, &work, &in_flight))
    };
    let Ok(reading) = reading else {
        err("error: cannot start a thread to read the input; try `--jobs 1`");
        return Exit::Failure;
    };
    let mut workers = 0;
    for _ in 0..jobs.get() {
        let (to_do, done, mut answers) = (Arc::clone(&to_do), done.clone(), answers.clone());
        let in_flight = Arc::clone(&in_flight);
        let spawned = std::thread::Builder::new()
            .name("faultline-answer".to_owned())
            .spawn(move || answer_batches(&to_do, &done, &in_flight, &mut answers));
        if spawned.is_ok() {
            workers += 1;
        }
    }
    drop(done);
    if workers == 0 {
        err("error: cannot start a thread to answer lines; try `--jobs 1`");
        return Exit::Failure;
    }

    let written = write_in_order(&answered, &in_flight, subject);
    let failed_lines = match written {
        Ok(failed_lines) => failed_lines,
        // The reader and the workers stop at their next step (the flight is closed, the
        // channels hang up); a reader blocked on a terminal ends with the process.
        Err(exit) => return exit,
    };
    match reading.join() {
        Ok(Ok(())) => {}
        Ok(Err(message)) => {
            err(&message);
            return Exit::Failure;
        }
        Err(_) => {
            err("error: reading the input failed");
            return Exit::Failure;
        }
    }
    if failed_lines {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

/// The reader: every line of every input, in batches. Stops at the first read error (its
/// message is the result) or when the writer stops.
fn read_batches(
    opened: Vec<Input>,
    work: &Sender<Batch>,
    in_flight: &InFlight,
) -> Result<(), String> {
    let mut sequence = 0;
    let mut buffer = Vec::new();
    for input in opened {
        let (name, source): (Arc<str>, Box<dyn std::io::Read + Send>) = match input {
            Input::Stdin => {
                use std::io::IsTerminal as _;
                if std::io::stdin().is_terminal() {
                    err("reading evidence as JSON lines from standard input; Ctrl-D to end");
                }
                (Arc::from(STDIN), Box::new(std::io::stdin()))
            }
            Input::File(path, file) => (Arc::from(path.display().to_string()), Box::new(file)),
        };
        let mut reader = BufReader::with_capacity(64 << 10, source);
        let mut number = 0;
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut ended = false;
        while !ended {
            let read = read_line(&mut reader, &mut buffer).map_err(|error| {
                format!(
                    "error: cannot read `{name}` after line {}: {error}",
                    number + batch.len()
                )
            });
            let read = match read {
                Ok(read) => read,
                Err(message) => {
                    // The lines before the error are still answered, then the message.
                    send(work, in_flight, &mut sequence, &name, number, batch, bytes);
                    return Err(message);
                }
            };
            match read {
                Read::End => ended = true,
                Read::TooLong => batch.push(None),
                Read::Line(line) => {
                    bytes += line.len();
                    batch.push(Some(line));
                }
            }
            // Nothing buffered: the next read may wait, so what was read is answered now.
            let full = bytes >= BATCH_BYTES || batch.len() >= BATCH_LINES;
            if !batch.is_empty() && (ended || full || reader.buffer().is_empty()) {
                let lines = std::mem::take(&mut batch);
                let count = lines.len();
                if !send(work, in_flight, &mut sequence, &name, number, lines, bytes) {
                    return Ok(());
                }
                number += count;
                bytes = 0;
            }
        }
    }
    Ok(())
}

/// Hands one batch to the workers once it fits in the flight; `false` if the writer stopped.
fn send(
    work: &Sender<Batch>,
    in_flight: &InFlight,
    sequence: &mut u64,
    input: &Arc<str>,
    last_number: usize,
    lines: Vec<Option<Vec<u8>>>,
    bytes: usize,
) -> bool {
    if lines.is_empty() {
        return true;
    }
    if !in_flight.acquire(bytes) {
        return false;
    }
    let batch = Batch {
        sequence: *sequence,
        input: Arc::clone(input),
        first_number: last_number + 1,
        lines,
        bytes,
    };
    *sequence += 1;
    work.send(batch).is_ok()
}

/// A worker: answers batches until the reader is done or the writer stopped.
fn answer_batches(
    to_do: &Mutex<Receiver<Batch>>,
    done: &Sender<AnsweredBatch>,
    in_flight: &InFlight,
    answers: &mut dyn Answers,
) {
    loop {
        let next = to_do.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(batch) = next else {
            return;
        };
        // A panic would leave a gap the writer waits on forever, and the reader waiting for
        // room behind it: stop reading instead, so the command ends with an error after the
        // answers before the gap.
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            batch
                .lines
                .iter()
                .zip(batch.first_number..)
                .map(|(line, number)| answer_line(&batch.input, number, line.as_deref(), answers))
                .collect()
        }));
        let Ok(answered) = answered else {
            in_flight.break_down();
            return;
        };
        let sent = done.send(AnsweredBatch {
            sequence: batch.sequence,
            input: batch.input,
            first_number: batch.first_number,
            answers: answered,
            bytes: batch.bytes,
        });
        if sent.is_err() {
            return;
        }
    }
}

/// The writer: answers in input order, flushed after each batch unless standard output is a
/// regular file. `Ok(true)` if a line failed; `Err` if standard output failed (or a worker
/// died, which would leave a gap).
fn write_in_order(
    answered: &Receiver<AnsweredBatch>,
    in_flight: &InFlight,
    subject: &str,
) -> Result<bool, Exit> {
    let flush_each = line_buffered();
    let stdout = std::io::stdout();
    let mut output = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut failed_lines = false;
    let mut waiting = BTreeMap::new();
    let mut next = 0;
    for batch in answered {
        waiting.insert(batch.sequence, batch);
        while let Some(batch) = waiting.remove(&next) {
            next += 1;
            for (answered, number) in batch.answers.iter().zip(batch.first_number..) {
                failed_lines |= answered.report(subject, &batch.input, number);
                output
                    .write_all(answered.text.as_bytes())
                    .and_then(|()| output.write_all(b"\n"))
                    .map_err(|error| write_failed(&error))?;
            }
            if flush_each {
                output.flush().map_err(|error| write_failed(&error))?;
            }
            in_flight.release(batch.bytes);
        }
    }
    output.flush().map_err(|error| write_failed(&error))?;
    if !waiting.is_empty() || in_flight.is_broken() {
        err("error: a thread answering lines stopped; answers after it were not written");
        return Err(Exit::Failure);
    }
    Ok(failed_lines)
}

/// The default number of worker threads: one per core the process may use, at most
/// [`MAX_DEFAULT_JOBS`] (more threads each keep their own search caches, for little gain).
pub fn default_jobs() -> NonZeroUsize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    NonZeroUsize::new(cores.min(MAX_DEFAULT_JOBS)).unwrap_or(NonZeroUsize::MIN)
}

/// The most worker threads `--jobs` picks by itself.
pub const MAX_DEFAULT_JOBS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flight_admits_one_oversized_batch_alone_and_waits_for_room() {
        let flight = Arc::new(InFlight::new(IN_FLIGHT_BYTES));
        assert!(flight.acquire(IN_FLIGHT_BYTES * 2), "alone, any size fits");
        let waiting = {
            let flight = Arc::clone(&flight);
            std::thread::spawn(move || flight.acquire(1))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiting.is_finished(), "a second batch waited for room");
        flight.release(IN_FLIGHT_BYTES * 2);
        assert!(waiting.join().unwrap());
    }

    /// Answers every line, but panics on a line holding `boom`.
    #[derive(Clone)]
    struct Fragile;

    impl Answers for Fragile {
        fn subject(&self) -> &'static str {
            "line"
        }

        fn answer(
            &mut self,
            line: super::super::Line<'_>,
        ) -> Result<String, super::super::LineError> {
            assert!(!line.fields.contains_key("boom"), "a bug in answering");
            Ok("{}".to_owned())
        }

        fn error_line(
            &mut self,
            _: &str,
            _: usize,
            _: Option<&serde_json::Value>,
            _: &super::super::LineError,
        ) -> String {
            "{}".to_owned()
        }
    }

    #[test]
    fn a_panicking_worker_ends_the_command_with_an_error_instead_of_a_hang() {
        let path =
            std::env::temp_dir().join(format!("faultline-fragile-{}.jsonl", std::process::id()));
        // The bad line is in the first batch; the flight holds one batch, so the reader waits
        // for the writer, who waits for that batch.
        let mut text = "{\"boom\":1}\n".to_owned();
        text.push_str(&"{}\n".repeat(100_000));
        std::fs::write(&path, text).unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        let inputs = vec![path.clone()];
        std::thread::spawn(move || {
            let jobs = NonZeroUsize::new(2).unwrap();
            let _ = sender.send(run_within(&inputs, Fragile, jobs, 1024));
        });
        let exit = receiver.recv_timeout(std::time::Duration::from_secs(60));
        let _ = std::fs::remove_file(&path);
        assert_eq!(exit, Ok(Exit::Failure));
    }

    #[test]
    fn a_closed_flight_stops_the_reader() {
        let flight = Arc::new(InFlight::new(IN_FLIGHT_BYTES));
        assert!(flight.acquire(IN_FLIGHT_BYTES));
        let waiting = {
            let flight = Arc::clone(&flight);
            std::thread::spawn(move || flight.acquire(IN_FLIGHT_BYTES))
        };
        flight.close();
        assert!(!waiting.join().unwrap());
        assert!(!flight.acquire(1));
    }
}
