//! Source files and byte spans, and the line/column arithmetic every renderer shares.

use std::sync::Arc;

use serde::Serialize;

/// A half-open byte range `start..end` in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Number of bytes covered.
    pub const fn len(self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no byte.
    pub const fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

/// A 1-based line and column (columns count Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineColumn {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// The text of one `.rules` file, with the name it is shown under.
#[derive(Debug)]
pub struct SourceFile {
    name: String,
    text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    /// A source file named `name` (usually its path as the user gave it).
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Self> {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(index, _)| index + 1))
            .collect();
        Arc::new(SourceFile {
            name: name.into(),
            text,
            line_starts,
        })
    }

    /// The name the file is shown under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The full text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text a span covers; empty when the span does not fall on character boundaries.
    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.start..span.end).unwrap_or("")
    }

    /// The line and column of a byte offset (clamped to the end of the file).
    pub fn line_column(&self, offset: usize) -> LineColumn {
        let offset = offset.min(self.text.len());
        let line_index = match self.line_starts.binary_search(&offset) {
            Ok(index) => index,
            Err(index) => index.saturating_sub(1),
        };
        let line_start = self.line_starts.get(line_index).copied().unwrap_or(0);
        let column = self
            .text
            .get(line_start..offset)
            .map_or(0, |prefix| prefix.chars().count());
        LineColumn {
            line: line_index + 1,
            column: column + 1,
        }
    }
}

impl SourceFile {
    /// The largest character boundary at or before `offset` (clamped to the end of the file).
    fn boundary_at_or_before(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// A byte offset as a count of UTF-16 code units from the start of the file (the unit of
    /// SARIF's default `columnKind`). An offset inside a character counts from its start.
    pub fn utf16_offset(&self, offset: usize) -> usize {
        let offset = self.boundary_at_or_before(offset);
        self.text
            .get(..offset)
            .map_or(0, |prefix| prefix.encode_utf16().count())
    }

    /// The line and column of a byte offset, the column counted in UTF-16 code units from 1
    /// (SARIF's `utf16CodeUnits`). [`SourceFile::line_column`] counts characters instead.
    pub fn utf16_line_column(&self, offset: usize) -> LineColumn {
        let offset = self.boundary_at_or_before(offset);
        let line = self.line_column(offset).line;
        let line_start = self
            .line_starts
            .get(line.saturating_sub(1))
            .copied()
            .unwrap_or(0);
        let column = self
            .text
            .get(line_start..offset)
            .map_or(0, |prefix| prefix.encode_utf16().count());
        LineColumn {
            line,
            column: column + 1,
        }
    }
}

impl miette::SourceCode for SourceFile {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        // Without context lines, miette shows the span's lines only up to the end of the span;
        // show the whole of each line (and nothing around them). The line and column are the
        // span's own, the column in characters as every renderer counts it: miette prints them
        // as the report's location (it reads them through this call, without context lines).
        if context_lines_before == 0 && context_lines_after == 0 {
            let start = self.boundary_at_or_before(span.offset());
            let end = self.boundary_at_or_before(span.offset().saturating_add(span.len()));
            let line_start = self
                .text
                .get(..start)
                .and_then(|before| before.rfind('\n'))
                .map_or(0, |index| index + 1);
            let line_end = self
                .text
                .get(end..)
                .and_then(|after| after.find('\n'))
                .map_or(self.text.len(), |index| end + index);
            let at = self.line_column(start);
            let lines =
                self.text
                    .read_span(&miette::SourceSpan::from(line_start..line_end), 0, 0)?;
            return Ok(Box::new(miette::MietteSpanContents::new_named(
                self.name.clone(),
                lines.data(),
                *lines.span(),
                at.line.saturating_sub(1),
                at.column.saturating_sub(1),
                lines.line_count(),
            )));
        }
        let contents = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            contents.data(),
            *contents.span(),
            contents.line(),
            contents.column(),
            contents.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_from_one() {
        let file = SourceFile::new("x.rules", "ab\nçd\n");
        assert_eq!(file.line_column(0), LineColumn { line: 1, column: 1 });
        assert_eq!(file.line_column(3), LineColumn { line: 2, column: 1 });
        // `d` follows the two-byte `ç`.
        assert_eq!(file.line_column(5), LineColumn { line: 2, column: 2 });
        assert_eq!(file.line_column(100), LineColumn { line: 3, column: 1 });
    }

    #[test]
    fn utf16_columns_count_astral_characters_twice() {
        // `😀` is four bytes, one character and two UTF-16 code units; `a` is at byte 6.
        let file = SourceFile::new("x.rules", "é😀a\n😀b");
        assert_eq!(file.line_column(6), LineColumn { line: 1, column: 3 });
        assert_eq!(file.utf16_line_column(6), LineColumn { line: 1, column: 4 });
        assert_eq!(file.utf16_offset(6), 3);
        // `b`, at byte 12, follows `😀` on line 2.
        assert_eq!(
            file.utf16_line_column(12),
            LineColumn { line: 2, column: 3 }
        );
        assert_eq!(file.utf16_offset(12), 7);
        // Inside `😀`: counted from its start.
        assert_eq!(file.utf16_offset(4), 1);
    }
}
