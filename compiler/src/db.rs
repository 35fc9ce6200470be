//! The incremental database (salsa): parsing, per-pattern lowering, per-group automata and
//! per-query analysis are tracked queries, so that checking a catalogue again after an edit
//! recomputes only what the edit reaches. Keys are interned values (pattern texts, component
//! lists); a query's result depends on nothing but its key, so it stays valid until evicted.

use std::sync::Arc;

use faultline_dsl::{Diagnostic, SourceFile, SyntaxFile};

/// The database trait the compiler's queries run against.
#[salsa::db]
pub trait Db: salsa::Database {
    /// Another handle on the same storage, for a worker thread: what either computes is
    /// memoized for both.
    fn fork(&self) -> Box<dyn Db>;
}

/// Runs `work` on each of `items` on worker threads, each with its own handle on the database,
/// so that the tracked queries it runs are memoized for the caller, which then finds them
/// computed. Items are taken in order: put the costliest first, since the last one to start
/// ends the wait. Where threads are unavailable nothing runs, and the caller computes what it
/// needs itself.
pub(crate) fn prefetch_in_parallel<T: Sync>(
    db: &dyn Db,
    items: &[T],
    work: impl Fn(&dyn Db, &T) + Sync,
) {
    // A handle is made on this thread (`fork` needs the database, which is not `Sync`) for
    // each worker, which takes one.
    let handles: std::sync::Mutex<Vec<Box<dyn Db>>> =
        std::sync::Mutex::new((0..crate::parallel::THREADS).map(|_| db.fork()).collect());
    crate::parallel::for_each(
        items,
        || handles.lock().ok().and_then(|mut handles| handles.pop()),
        |handle, item| {
            if let Some(db) = handle {
                work(&**db, item);
            }
        },
    );
}

/// The concrete database. Keep one per session to reuse work across compilations.
#[salsa::db]
#[derive(Clone, Default)]
pub struct Database {
    storage: salsa::Storage<Self>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Database")
    }
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn fork(&self) -> Box<dyn Db> {
        Box::new(self.clone())
    }
}

/// One source file's text, as the session last read it.
#[salsa::input(debug)]
pub struct SourceInput {
    /// The name it is shown under.
    #[returns(ref)]
    pub name: String,
    /// Its text.
    #[returns(ref)]
    pub text: String,
}

/// A parsed file.
#[derive(Debug)]
pub struct Parsed {
    /// The source, for diagnostics.
    pub source: Arc<SourceFile>,
    /// The syntax tree.
    pub syntax: SyntaxFile,
    /// Syntax diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parsing, tracked per file.
#[salsa::tracked(returns(ref), no_eq)]
pub fn parsed(db: &dyn Db, file: SourceInput) -> Arc<Parsed> {
    let source = SourceFile::new(file.name(db).clone(), file.text(db).clone());
    let (syntax, diagnostics) = faultline_dsl::parse(&source);
    Arc::new(Parsed {
        source,
        syntax,
        diagnostics,
    })
}

/// A pattern and the budgets it is built under alone.
#[salsa::interned(debug)]
pub struct PatternKey<'db> {
    /// The pattern text.
    #[returns(ref)]
    pub text: String,
    /// A smaller exact budget tried first, whose attempt another stage shares (in bytes).
    pub first: usize,
    /// The budget of an exact attempt, in bytes.
    pub budget: usize,
    /// The budget of the widened attempt, in bytes.
    pub wide_budget: usize,
    /// Memory the determinizer may use, at most, in bytes.
    pub determinize: usize,
    /// Heap of the Thompson NFA, in bytes.
    pub nfa: usize,
}

/// One attempt at a pattern's DFA alone (exact, or with bounded gaps widened), under its
/// limits.
#[salsa::interned(debug)]
pub struct ExactKey<'db> {
    /// The pattern text.
    #[returns(ref)]
    pub text: String,
    /// Whether bounded repetitions are widened first.
    pub widened: bool,
    /// Size of the DFA, in bytes.
    pub dfa: usize,
    /// Memory the determinizer may use, in bytes.
    pub determinize: usize,
    /// Heap of the Thompson NFA, in bytes.
    pub nfa: usize,
}

/// A group of patterns (with their widened flag) built into one DFA under a budget.
#[salsa::interned(debug)]
pub struct GroupKey<'db> {
    /// Member patterns.
    #[returns(ref)]
    pub patterns: Vec<(String, bool)>,
    /// The budget, in bytes.
    pub budget: usize,
    /// Memory the determinizer may use.
    pub determinize: usize,
    /// Heap of the Thompson NFA, in bytes.
    pub nfa: usize,
}

/// An analysis query: components (pattern, must match, view index), witnesses wanted, and the
/// budgets it runs under.
#[salsa::interned(debug)]
pub struct QueryKey<'db> {
    /// The components.
    #[returns(ref)]
    pub components: Vec<(String, bool, u8)>,
    /// How many witnesses to collect.
    pub wanted: usize,
    /// Product states the search may explore.
    pub max_states: usize,
    /// Budgets of each component automaton: (the lowering's first exact attempt, the states one
    /// query may determinize, determinization, NFA), in bytes.
    pub component_budget: (usize, usize, usize, usize),
}

/// A pattern's text, interned.
#[salsa::interned(debug)]
pub struct PatternText<'db> {
    /// The pattern as written.
    #[returns(ref)]
    pub text: String,
}

/// A pattern's text and the size limit of the `regex` program the runtime compiles for it.
#[salsa::interned(debug)]
pub struct RegexKey<'db> {
    /// The pattern, in lowered syntax.
    #[returns(ref)]
    pub text: String,
    /// The size limit, in bytes.
    pub limit: usize,
}

/// A pattern's text and the nesting limit it is validated under.
#[salsa::interned(debug)]
pub struct PatternSource<'db> {
    /// The pattern as written.
    #[returns(ref)]
    pub text: String,
    /// The nesting limit.
    pub nest_limit: u32,
}

/// Validating and lowering a pattern, tracked.
#[salsa::tracked(returns(ref))]
pub fn lowered_pattern<'db>(
    db: &'db dyn Db,
    pattern: PatternSource<'db>,
) -> Result<crate::pattern::LoweredPattern, Vec<crate::pattern::PatternProblem>> {
    crate::pattern::prepare_with(pattern.text(db), *pattern.nest_limit(db))
}

/// A validated pattern's syntax tree, tracked: the lowering, its groups and the analysis
/// parse the same patterns.
#[salsa::tracked(returns(ref))]
pub fn pattern_hir<'db>(
    db: &'db dyn Db,
    pattern: PatternText<'db>,
) -> Result<Arc<regex_syntax::hir::Hir>, Box<regex_syntax::Error>> {
    crate::pattern::parse_hir(pattern.text(db)).map(Arc::new)
}

/// A pattern's required conjuncts (for the runtime prefilter), tracked.
#[salsa::tracked(returns(ref))]
pub fn required_conjuncts<'db>(
    db: &'db dyn Db,
    pattern: PatternText<'db>,
) -> Option<Vec<Vec<String>>> {
    // From the tracked syntax tree: parsing a case-insensitive pattern again is not free.
    crate::literals::conjuncts_of(pattern_hir(db, pattern).as_ref().ok()?)
}

/// A pattern's required words (for the overlap pre-filter), tracked.
#[salsa::tracked(returns(ref))]
pub fn required_words<'db>(db: &'db dyn Db, pattern: PatternText<'db>) -> Option<Vec<String>> {
    crate::literals::requirement(pattern_hir(db, pattern).as_ref().ok()?)
        .map(|requirement| requirement.words)
}
