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

/// The longest input line that is parsed. Longer lines are answered with an error and skipped
/// as they are read, so they never sit in memory. Evidence text past the classifier's own
/// bound is not read anyway (see docs/evidence.md); this bound only keeps a JSON line of huge
/// text from costing more than a few times its size.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Why one input line could not be answered: the field at fault (a JSON path such as
/// `phase`), when there is one, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    /// The offending field, or `None` when the line as a whole is at fault.
    pub field: Option<String>,
    /// What is wrong, for a person.
    pub message: String,
}

impl LineError {
    /// An error about the whole line.
    pub fn line(message: impl Into<String>) -> Self {
        LineError {
            field: None,
            message: message.into(),
        }
    }

    /// An error about one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        LineError {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// The message for a person, naming the field.
    fn describe(&self) -> String {
        match &self.field {
            Some(field) => format!("field `{field}`: {}", self.message),
            None => self.message.clone(),
        }
    }
}

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
    let mut detail = Map::new();
    detail.insert(
        "field".to_owned(),
        error.field.clone().map_or(Value::Null, Value::from),
    );
    detail.insert("message".to_owned(), Value::from(error.message.clone()));
    object.insert("error".to_owned(), Value::Object(detail));
    Value::Object(object).to_string()
}

/// Puts the caller's `id` first in an answer that is a JSON object, so a caller can match
/// answers to requests without counting lines.
pub fn with_id(answer: String, id: Option<&Value>) -> String {
    match (id, answer.strip_prefix('{')) {
        (Some(id), Some(rest)) => {
            let separator = if rest.starts_with('}') { "" } else { "," };
            format!("{{\"id\":{id}{separator}{rest}")
        }
        _ => answer,
    }
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

/// Parses one line into its fields and its caller-chosen `id`.
fn parse(bytes: &[u8]) -> (Option<Value>, Result<Map<String, Value>, LineError>) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return (
            None,
            Err(LineError::line(
                "the line is not UTF-8 text: expected one JSON object",
            )),
        );
    };
    if text.trim().is_empty() {
        return (
            None,
            Err(LineError::line(
                "the line is blank: expected one JSON object",
            )),
        );
    }
    let mut fields = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields,
        Ok(other) => {
            return (
                None,
                Err(LineError::line(format!(
                    "expected a JSON object, found {}",
                    kind(&other)
                ))),
            );
        }
        Err(error) => return (None, Err(LineError::line(format!("invalid JSON: {error}")))),
    };
    match fields.remove("id") {
        None => (None, Ok(fields)),
        Some(id @ (Value::String(_) | Value::Number(_))) => (Some(id), Ok(fields)),
        Some(other) => (
            None,
            Err(LineError::field(
                "id",
                format!("expected a string or a number, found {}", kind(&other)),
            )),
        ),
    }
}

/// The JSON type of a value, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
            let (id, result) = match read {
                Read::End => break,
                Read::TooLong => (
                    None,
                    Err(LineError::line(format!(
                        "the line is longer than {MAX_LINE_BYTES} bytes and was skipped"
                    ))),
                ),
                Read::Line(bytes) => {
                    let (id, fields) = parse(&bytes);
                    buffer = bytes;
                    let answer = fields.and_then(|fields| {
                        answers.answer(Line {
                            input: &name,
                            number,
                            fields,
                        })
                    });
                    (id, answer)
                }
            };
            let text = match result {
                Ok(answer) => one_line(with_id(answer, id.as_ref())),
                Err(error) => {
                    failed_lines = true;
                    err(&format!(
                        "{name}:{number}: invalid {}: {}",
                        answers.subject(),
                        error.describe()
                    ));
                    one_line(answers.error_line(&name, number, id.as_ref(), &error))
                }
            };
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

/// An answer must stay one line whatever the input carried (a session name with a newline
/// in it, say): line breaks and other control characters are written as escapes.
fn one_line(answer: String) -> String {
    if !answer.chars().any(char::is_control) {
        return answer;
    }
    answer
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
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
    fn ids_go_first_and_error_objects_name_line_input_id_and_field() {
        let id = Value::from("req-7");
        assert_eq!(
            with_id("{\"a\":1}".to_owned(), Some(&id)),
            "{\"id\":\"req-7\",\"a\":1}"
        );
        assert_eq!(with_id("{}".to_owned(), Some(&id)), "{\"id\":\"req-7\"}");
        assert_eq!(with_id("text".to_owned(), Some(&id)), "text");
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

    #[test]
    fn ids_must_be_strings_or_numbers() {
        assert_eq!(parse(br#"{"id":7,"a":1}"#).0, Some(Value::from(7)));
        let (id, fields) = parse(br#"{"id":{"x":1}}"#);
        assert_eq!(id, None);
        assert_eq!(
            fields.err().and_then(|error| error.field),
            Some("id".to_owned())
        );
        assert!(parse(b"[1]").1.is_err());
        assert!(parse(b"  ").1.is_err());
        assert!(parse(b"\xff{}").1.is_err());
    }
}
