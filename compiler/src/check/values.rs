//! Values: names of the runtime's closed vocabularies (classes, phases, views, …), numbers
//! in range, declared provider ids and remediation tokens, each refused with the code its
//! kind is reported under.

use std::sync::Arc;

use faultline_dsl::ast::{self, List, StringLit, Value};
use faultline_dsl::{Code, Diagnostic, SourceFile};
use faultline_runtime::{
    Class, Confidence, EvidenceField, Flag, Phase, Scope, Source, TextView, TimingExtractor,
};

use super::Checker;
use crate::suggest;

/// A value of a closed vocabulary (`faultline_runtime::vocab`) as the checker looks it up by
/// name, with the code its unknown names are reported under.
pub(super) trait Vocabulary: Sized + Copy + 'static {
    const KIND: &'static str;
    const CODE: Code;
    fn lookup(name: &str) -> Option<Self>;
    fn all_names() -> Vec<&'static str>;
}

macro_rules! checked_vocabulary {
    ($type:ty, $code:expr) => {
        impl Vocabulary for $type {
            const KIND: &'static str = <$type>::KIND;
            const CODE: Code = $code;
            fn lookup(name: &str) -> Option<Self> {
                <$type>::from_name(name)
            }
            fn all_names() -> Vec<&'static str> {
                <$type>::names().collect()
            }
        }
    };
}

checked_vocabulary!(Class, Code::UnknownClass);
checked_vocabulary!(Confidence, Code::UnknownConfidence);
checked_vocabulary!(Scope, Code::UnknownScope);
checked_vocabulary!(Phase, Code::UnknownPhase);
checked_vocabulary!(Source, Code::UnknownSource);
checked_vocabulary!(Flag, Code::UnknownName);
checked_vocabulary!(TextView, Code::UnknownName);
checked_vocabulary!(TimingExtractor, Code::UnknownName);
checked_vocabulary!(EvidenceField, Code::UnknownName);

impl Checker<'_> {
    pub(super) fn vocab<T: Vocabulary>(
        &mut self,
        file: &Arc<SourceFile>,
        name: &ast::Name,
    ) -> Option<T> {
        let found = T::lookup(&name.value);
        if found.is_none() {
            let names = T::all_names();
            self.push(
                Diagnostic::new(T::CODE, format!("unknown {} `{}`", T::KIND, name.value))
                    .primary(file, name.span, format!("not a {}", T::KIND))
                    .help(suggest::help(&name.value, T::KIND, names.iter().copied())),
            );
        }
        found
    }

    pub(super) fn vocab_value<T: Vocabulary>(
        &mut self,
        file: &Arc<SourceFile>,
        value: &Value,
    ) -> Option<T> {
        match value {
            Value::Ident(name) => self.vocab(file, name),
            other => {
                self.type_mismatch(file, other, &format!("a {} name", T::KIND));
                None
            }
        }
    }

    pub(super) fn type_mismatch(&mut self, file: &Arc<SourceFile>, value: &Value, expected: &str) {
        let help = match value {
            Value::Str(string) => format!("write {expected} without quotes: `{}`", string.value),
            Value::Ident(name) => format!("write {expected}, e.g. `\"{}\"`", name.value),
            Value::Int(_) => format!("write {expected}"),
        };
        self.push(
            Diagnostic::new(
                Code::TypeMismatch,
                format!("expected {expected}, found {}", value.kind_name()),
            )
            .primary(file, value.span(), format!("expected {expected}"))
            .help(help),
        );
    }

    pub(super) fn int_in(
        &mut self,
        file: &Arc<SourceFile>,
        int: &ast::IntLit,
        range: std::ops::RangeInclusive<i64>,
        what: &str,
    ) -> Option<i64> {
        let value = int.value?;
        if range.contains(&value) {
            return Some(value);
        }
        self.push(
            Diagnostic::new(
                Code::IntegerOutOfRange,
                format!("{what} `{value}` is out of range"),
            )
            .primary(
                file,
                int.span,
                format!("expected {}..={}", range.start(), range.end()),
            )
            .help(format!(
                "a {what} is a number from {} to {}",
                range.start(),
                range.end()
            )),
        );
        None
    }

    pub(super) fn provider(
        &mut self,
        file: &Arc<SourceFile>,
        value: &Value,
        declared: &[String],
    ) -> Option<String> {
        let Value::Str(string) = value else {
            self.type_mismatch(file, value, "a provider id string");
            return None;
        };
        if declared.contains(&string.value) {
            return Some(string.value.clone());
        }
        self.push(
            Diagnostic::new(
                Code::UndeclaredProvider,
                format!("provider `{}` is not declared", string.value),
            )
            .primary(file, string.span, "undeclared provider")
            .help(
                match suggest::closest(&string.value, declared.iter().map(String::as_str)) {
                    Some(best) => format!(
                        "did you mean `{best}`? otherwise declare it with `provider \"{}\"`",
                        string.value
                    ),
                    None => format!(
                        "declare it with `provider \"{}\"`, or correct the id",
                        string.value
                    ),
                },
            ),
        );
        None
    }

    pub(super) fn token(&mut self, file: &Arc<SourceFile>, token: &StringLit) -> Option<String> {
        let valid = !token.value.is_empty()
            && token
                .value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            return Some(token.value.clone());
        }
        self.push(
            Diagnostic::new(Code::TypeMismatch, format!("remediation token `{}` is not a snake_case token", token.value))
                .primary(file, token.span, "expected a token such as `start_fresh_session`")
                .help("a remediation token is lowercase ASCII letters, digits and `_`; to report a value from the text, use `remediation capture` in a rule"),
        );
        None
    }

    /// Resolves a list of vocabulary names, reporting unknown and repeated entries.
    pub(super) fn vocab_list<T: Vocabulary + PartialEq>(
        &mut self,
        file: &Arc<SourceFile>,
        list: &List,
    ) -> Option<Vec<T>> {
        let mut out: Vec<T> = Vec::new();
        let mut ok = true;
        for value in &list.items {
            match self.vocab_value::<T>(file, value) {
                Some(found) if out.contains(&found) => {
                    ok = false;
                    self.push(
                        Diagnostic::new(
                            Code::DuplicateDeclaration,
                            format!("`{}` is listed twice", file.slice(value.span())),
                        )
                        .primary(file, value.span(), "listed again here")
                        .help("delete the repeated entry"),
                    );
                }
                Some(found) => out.push(found),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    pub(super) fn int_value(
        &mut self,
        file: &Arc<SourceFile>,
        value: &Value,
        range: std::ops::RangeInclusive<i64>,
        what: &str,
    ) -> Option<i64> {
        match value {
            Value::Int(int) => self.int_in(file, int, range, what),
            other => {
                self.type_mismatch(file, other, &format!("a number ({what})"));
                None
            }
        }
    }
}
