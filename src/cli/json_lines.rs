//! The JSON-lines protocol shared by `classify` and `recover`: how input is read, how each
//! line is answered, and when the answers are flushed.
//!
//! An orchestrator drives these commands as a co-process: it writes one line and waits for the
//! answer. So every input line gets exactly one output line, in order, written as soon as the
//! line is read (flushed at once unless standard output is a regular file); a line that cannot
//! be answered gets an error object in its place, so no later answer shifts. Memory stays
//! bounded on hostile input: a line longer than [`MAX_LINE_BYTES`] is skipped without being
//! held, and answered with an error.

use std::io::{BufRead, Read as _, Write};
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{Exit, err};

mod parallel;

pub use parallel::{default_jobs, run as run_parallel};

/// The longest input line that is parsed. Longer lines are answered with an error and skipped
/// as they are read, so they never sit in memory. Evidence text past the classifier's own
/// bound is not read anyway (see docs/evidence.md); this bound only keeps a JSON line of huge
/// text from costing more than a few times its size.
pub const MAX_LINE_BYTES: usize = 64 << 20;

pub use faultline_serve::{
    LineError, context_field, json_kind as kind, one_line, string_field, with_id,
};

/// One input line as the commands see it.
#[derive(Debug)]
pub struct Line<'a> {
    /// The input's name (`<stdin>` or the path).
    pub input: &'a str,
    /// The line's number in its input, from 1.
    pub number: usize,
    /// The line's fields (a JSON object), with `id` already taken out.
    pub fields: Map<String, Value>,
}

/// How a command words its answers.
pub trait Answers {
    /// What a line holds, for messages: `evidence`, `event`.
    fn subject(&self) -> &'static str;

    /// Answers one well-formed line: the output line (without its newline), or why it failed.
    fn answer(&mut self, line: Line<'_>) -> Result<String, LineError>;

    /// The output line that stands for a line that could not be answered. `id` is the line's
    /// own `id`, when it had a valid one. It may change the command's state: `recover` must
    /// know that an event of a session was lost.
    fn error_line(
        &mut self,
        input: &str,
        number: usize,
        id: Option<&Value>,
        error: &LineError,
    ) -> String;
}

/// The machine-readable stand-in for a failed line:
/// `{"line":N,"input":…,"id":…,"error":{"field":…,"message":…}}` (`input` only for files, `id`
/// only when the line had one).
pub fn error_object(input: &str, number: usize, id: Option<&Value>, error: &LineError) -> String {
    let mut object = Map::new();
    object.insert("line".to_owned(), Value::from(number));
    if input != STDIN {
        object.insert("input".to_owned(), Value::from(input));
    }
    if let Some(id) = id {
        object.insert("id".to_owned(), id.clone());
    }
    object.insert("error".to_owned(), error.to_json());
    Value::Object(object).to_string()
}

const STDIN: &str = "<stdin>";

/// An input the user named: standard input (`-`, or no input at all) or a file.
enum Input {
    Stdin,
    File(PathBuf, std::fs::File),
}

/// Opens every input before anything is read, so that a wrong path ends the command before
/// any answer is written (exit 2), rather than after half the answers.
fn open(inputs: &[PathBuf]) -> Result<Vec<Input>, Exit> {
    if inputs.is_empty() {
        return Ok(vec![Input::Stdin]);
    }
    let mut opened = Vec::new();
    let mut failed = false;
    for path in inputs {
        if path.as_os_str() == "-" {
            opened.push(Input::Stdin);
            continue;
        }
        let file = std::fs::File::open(path).and_then(|file| {
            if file.metadata()?.is_dir() {
                Err(std::io::Error::other(
                    "it is a directory; give a file of JSON lines, or `-` for standard input",
                ))
            } else {
                Ok(file)
            }
        });
        match file {
            Ok(file) => opened.push(Input::File(path.clone(), file)),
            Err(error) => {
                failed = true;
                err(&format!("error: cannot read `{}`: {error}", path.display()));
            }
        }
    }
    if failed {
        Err(Exit::Failure)
    } else {
        Ok(opened)
    }
}

/// Whether answers should be flushed line by line: unless standard output is a regular file
/// (nobody waits on a file, and flushing it per line costs a system call per answer).
fn line_buffered() -> bool {
    use std::os::fd::AsFd as _;
    let Ok(owned) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return true;
    };
    std::fs::File::from(owned)
        .metadata()
        .map_or(true, |metadata| !metadata.is_file())
}

/// One physical line, read with a bound.
enum Read {
    Line(Vec<u8>),
    TooLong,
    End,
}

/// Reads the next line (without its `\n`). A line over [`MAX_LINE_BYTES`] is consumed up to
/// its newline without being kept.
fn read_line(reader: &mut dyn BufRead, buffer: &mut Vec<u8>) -> std::io::Result<Read> {
    buffer.clear();
    let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX);
    let read = (&mut *reader)
        .take(limit.saturating_add(1))
        .read_until(b'\n', buffer)?;
    if read == 0 {
        return Ok(Read::End);
    }
    if buffer.last() == Some(&b'\n') {
        buffer.pop();
        if buffer.last() == Some(&b'\r') {
            buffer.pop();
        }
        return Ok(Read::Line(std::mem::take(buffer)));
    }
    if buffer.len() <= MAX_LINE_BYTES {
        // The last line of the input, without a newline.
        return Ok(Read::Line(std::mem::take(buffer)));
    }
    buffer.clear();
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(Read::TooLong);
        }
        if let Some(newline) = available.iter().position(|&byte| byte == b'\n') {
            reader.consume(newline + 1);
            return Ok(Read::TooLong);
        }
        let len = available.len();
        reader.consume(len);
    }
}

/// What one input line became: its output line, and why it failed when it did.
#[derive(Debug)]
struct Answered {
    /// The output line, without its newline.
    text: String,
    /// The line's error, reported on standard error too.
    failure: Option<String>,
}

impl Answered {
    /// Reports a failed line on standard error as `input:N: invalid <subject>: message`;
    /// whether it failed.
    fn report(&self, subject: &str, name: &str, number: usize) -> bool {
        if let Some(failure) = &self.failure {
            err(&format!("{name}:{number}: invalid {subject}: {failure}"));
        }
        self.failure.is_some()
    }
}

/// Answers one physical line (`None`: a line over [`MAX_LINE_BYTES`], skipped unread).
fn answer_line(
    name: &str,
    number: usize,
    bytes: Option<&[u8]>,
    answers: &mut dyn Answers,
) -> Answered {
    let (id, result) = match bytes {
        None => (
            None,
            Err(LineError::line(format!(
                "the line is longer than {MAX_LINE_BYTES} bytes and was skipped"
            ))),
        ),
        Some(bytes) => {
            let (id, fields) = faultline_serve::parse_object(bytes);
            let answer = fields.and_then(|fields| {
                answers.answer(Line {
                    input: name,
                    number,
                    fields,
                })
            });
            (id, answer)
        }
    };
    match result {
        Ok(answer) => Answered {
            text: one_line(with_id(answer, id.as_ref())),
            failure: None,
        },
        Err(error) => Answered {
            text: one_line(answers.error_line(name, number, id.as_ref(), &error)),
            failure: Some(error.describe()),
        },
    }
}

/// Answers every line of `inputs` (standard input when there are none), in order. Each bad
/// line is also reported on standard error as `input:N: message`.
///
/// Exit: 2 if an input could not be opened or read (the command stops at the first read
/// error, after one message), else 1 if a line could not be answered, else 0.
pub fn run(inputs: &[PathBuf], answers: &mut dyn Answers) -> Exit {
    let opened = match open(inputs) {
        Ok(opened) => opened,
        Err(exit) => return exit,
    };
    let flush_each = line_buffered();
    let stdout = std::io::stdout();
    let mut output = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut failed_lines = false;
    let mut buffer = Vec::new();
    for input in opened {
        let (name, mut reader): (String, Box<dyn BufRead>) = match input {
            Input::Stdin => {
                use std::io::IsTerminal as _;
                if std::io::stdin().is_terminal() {
                    err("reading evidence as JSON lines from standard input; Ctrl-D to end");
                }
                (STDIN.to_owned(), Box::new(std::io::stdin().lock()))
            }
            Input::File(path, file) => (
                path.display().to_string(),
                Box::new(std::io::BufReader::with_capacity(64 << 10, file)),
            ),
        };
        let mut number = 0;
        loop {
            let read = match read_line(reader.as_mut(), &mut buffer) {
                Ok(read) => read,
                Err(error) => {
                    let _ = output.flush();
                    err(&format!(
                        "error: cannot read `{name}` after line {number}: {error}"
                    ));
                    return Exit::Failure;
                }
            };
            number += 1;
            let answered = match read {
                Read::End => break,
                Read::TooLong => answer_line(&name, number, None, answers),
                Read::Line(bytes) => {
                    let answered = answer_line(&name, number, Some(&bytes), answers);
                    buffer = bytes;
                    answered
                }
            };
            failed_lines |= answered.report(answers.subject(), &name, number);
            let text = answered.text;
            let written = output
                .write_all(text.as_bytes())
                .and_then(|()| output.write_all(b"\n"))
                .and_then(|()| if flush_each { output.flush() } else { Ok(()) });
            if let Err(error) = written {
                return write_failed(&error);
            }
        }
    }
    if let Err(error) = output.flush() {
        return write_failed(&error);
    }
    if failed_lines {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

/// Standard output is gone or full: nothing more can be answered. A reader that hung up
/// (`| head`) is not an error worth a message.
fn write_failed(error: &std::io::Error) -> Exit {
    if error.kind() != std::io::ErrorKind::BrokenPipe {
        err(&format!("error: cannot write standard output: {error}"));
    }
    Exit::Failure
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8]) -> Vec<Result<Vec<u8>, ()>> {
        let mut reader = std::io::BufReader::with_capacity(7, text);
        let mut buffer = Vec::new();
        let mut found = Vec::new();
        loop {
            match read_line(&mut reader, &mut buffer) {
                Ok(Read::End) => return found,
                Ok(Read::Line(line)) => found.push(Ok(line)),
                Ok(Read::TooLong) => found.push(Err(())),
                Err(_) => return found,
            }
        }
    }

    #[test]
    fn lines_are_split_on_newlines_with_crlf_and_a_missing_last_newline() {
        assert_eq!(
            lines(b"a\r\nbc\n\nd"),
            vec![
                Ok(b"a".to_vec()),
                Ok(b"bc".to_vec()),
                Ok(Vec::new()),
                Ok(b"d".to_vec())
            ]
        );
    }

    #[test]
    fn error_objects_name_line_input_id_and_field() {
        let id = Value::from("req-7");
        let error = LineError::field("phase", "unknown variant");
        let object: Value = serde_json::from_str(&error_object("a.jsonl", 3, Some(&id), &error))
            .unwrap_or_default();
        assert_eq!(object["line"], 3);
        assert_eq!(object["input"], "a.jsonl");
        assert_eq!(object["id"], "req-7");
        assert_eq!(object["error"]["field"], "phase");
        let object: Value =
            serde_json::from_str(&error_object(STDIN, 1, None, &LineError::line("bad")))
                .unwrap_or_default();
        assert!(object.get("input").is_none() && object.get("id").is_none());
        assert_eq!(object["error"]["field"], Value::Null);
    }
}
