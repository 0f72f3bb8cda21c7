//! The index on disk: one Tantivy index in a directory of its own, written by one process and
//! readable by others. A commit carries the caller's payload (what the index has taken in), and
//! a [`Snapshot`] pairs a searcher with the payload of the commit it reads.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tantivy::columnar::Column;
use tantivy::indexer::IndexWriterOptions;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{PreTokenizedString, Token};
use tantivy::{
    DocAddress, Index, IndexReader, IndexSettings, IndexSortByField, IndexWriter, Order,
    ReloadPolicy, Searcher, TantivyDocument, Term,
};

use crate::Result;
use crate::words::{Words, term_text};

/// The index's fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// The message's id (indexed for deletes, fast to read back from a hit).
    pub(crate) id: Field,
    /// The message's project (indexed: a project's document count is its term's frequency).
    pub(crate) project: Field,
    /// The agents who sent or received the message (a viewer's filter).
    pub(crate) who: Field,
    /// Subject then body, as `<project>:<word>` terms with frequencies and positions.
    pub(crate) words: Field,
}

/// Bumped when the fields or the terms change: an index of another version is rebuilt.
const SCHEMA_VERSION: &str = "words-v1";

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let id = builder.add_u64_field("id", INDEXED | FAST);
    let project = builder.add_u64_field("project", INDEXED);
    let who = builder.add_u64_field("who", INDEXED);
    let indexing = TextFieldIndexing::default()
        .set_tokenizer("raw")
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let words = builder
        .add_text_field(SCHEMA_VERSION, TextOptions::default().set_indexing_options(indexing));
    (builder.build(), Fields { id, project, who, words })
}

/// Documents stay in message-id order, in every segment and through merges: among equal
/// scores a segment's best are then its lowest ids, as FTS5 breaks ties.
fn settings() -> IndexSettings {
    let sort_by_field = IndexSortByField { field: "id".into(), order: Order::Asc };
    IndexSettings { sort_by_field: Some(sort_by_field), ..IndexSettings::default() }
}

/// Whether `index` has this version's fields and settings.
fn is_ours(index: &Index, schema: &Schema) -> bool {
    index.schema() == *schema && index.settings().sort_by_field == settings().sort_by_field
}

/// A message to index.
#[derive(Debug, Clone, Copy)]
pub struct NewDoc<'a> {
    pub id: u64,
    pub project: u64,
    pub subject: &'a str,
    pub body: &'a str,
    /// Its sender and recipients.
    pub who: &'a [u64],
}

/// What a search reads: a searcher and the payload of the commit it was opened on.
pub struct Snapshot {
    pub(crate) searcher: Searcher,
    pub(crate) fields: Fields,
    payload: Option<String>,
    /// Each segment's message ids, opened once (opening reads the column's whole layout).
    ids: OnceLock<Vec<Column<u64>>>,
}

impl Snapshot {
    fn new(searcher: Searcher, fields: Fields, payload: Option<String>) -> Self {
        Self { searcher, fields, payload, ids: OnceLock::new() }
    }

    /// The message id of a hit.
    pub(crate) fn id_of(&self, address: DocAddress) -> Result<u64> {
        let ids = match self.ids.get() {
            Some(ids) => ids,
            None => {
                let opened = self
                    .searcher
                    .segment_readers()
                    .iter()
                    .map(|segment| segment.fast_fields().u64("id"))
                    .collect::<Result<Vec<_>>>()?;
                self.ids.get_or_init(|| opened)
            }
        };
        let column = ids.get(address.segment_ord as usize);
        column.and_then(|c| c.first(address.doc_id)).ok_or_else(|| {
            tantivy::TantivyError::InternalError(format!("document {address:?} has no id"))
        })
    }

    /// The payload of the commit this snapshot reads (`None`: nothing committed yet).
    pub fn payload(&self) -> Option<&str> {
        self.payload.as_deref()
    }

    /// Messages in the index (deleted ones included until their segment is merged).
    pub fn len(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// Whether the index holds no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The index in a directory.
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    /// `None`: opened to read only (another process writes).
    writer: Option<Mutex<IndexWriter>>,
    snapshot: Mutex<Arc<Snapshot>>,
}

/// The writer's memory before it writes a segment out (Tantivy's least).
const WRITER_MEMORY: usize = 15_000_000;

impl SearchIndex {
    /// Opens the index in `dir` to write it, creating it (and the directory) when missing.
    /// An index of another version, or one Tantivy cannot open, is removed and created empty:
    /// the caller fills it again from the database. Fails when another process writes it.
    pub fn open_writable(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = schema();
        let index = match Index::open_in_dir(dir) {
            Ok(index) if is_ours(&index, &schema) => index,
            Ok(_) | Err(_) => {
                clear_directory(dir)?;
                Index::builder().schema(schema).settings(settings()).create_in_dir(dir)?
            }
        };
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_MEMORY)
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer = index.writer_with_options(options)?;
        Self::with(index, fields, Some(writer))
    }

    /// Opens the index in `dir` to read it; `None` when there is none (or of another version).
    pub fn open_read_only(dir: &Path) -> Result<Option<Self>> {
        let (schema, fields) = schema();
        match Index::open_in_dir(dir) {
            Ok(index) if is_ours(&index, &schema) => Self::with(index, fields, None).map(Some),
            Ok(_) | Err(_) => Ok(None),
        }
    }

    fn with(index: Index, fields: Fields, writer: Option<IndexWriter>) -> Result<Self> {
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let payload = index.load_metas()?.payload;
        let snapshot = Arc::new(Snapshot::new(reader.searcher(), fields, payload));
        Ok(Self {
            index,
            reader,
            fields,
            writer: writer.map(Mutex::new),
            snapshot: Mutex::new(snapshot),
        })
    }

    /// What searches read now. An index opened to read only looks for a newer commit first;
    /// its payload is read before the searcher, so it never claims more than the searcher has.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>> {
        if self.writer.is_none() {
            let payload = self.index.load_metas()?.payload;
            self.reader.reload()?;
            let fresh = Snapshot::new(self.reader.searcher(), self.fields, payload);
            *lock(&self.snapshot) = Arc::new(fresh);
        }
        Ok(Arc::clone(&lock(&self.snapshot)))
    }

    fn writer(&self) -> Result<MutexGuard<'_, IndexWriter>> {
        match &self.writer {
            Some(writer) => Ok(lock(writer)),
            None => {
                Err(tantivy::TantivyError::InvalidArgument("the index is open to read only".into()))
            }
        }
    }

    /// Adds messages (seen by searches after the next [`Self::commit`]).
    pub fn add(&self, docs: &[NewDoc<'_>]) -> Result<()> {
        let writer = self.writer()?;
        let mut words = Words::new();
        for doc in docs {
            let mut document = TantivyDocument::new();
            document.add_u64(self.fields.id, doc.id);
            document.add_u64(self.fields.project, doc.project);
            for agent in doc.who {
                document.add_u64(self.fields.who, *agent);
            }
            // Subject and body are two values of one field: one length (FTS5's row size), and
            // a gap in positions between them, so no phrase spans the two.
            for text in [doc.subject, doc.body] {
                let tokens = words
                    .split(text)
                    .into_iter()
                    .enumerate()
                    .map(|(position, word)| Token {
                        offset_from: 0,
                        offset_to: 0,
                        position,
                        text: term_text(doc.project, &word),
                        position_length: 1,
                    })
                    .collect();
                let value = PreTokenizedString { text: String::new(), tokens };
                document.add_pre_tokenized_text(self.fields.words, value);
            }
            writer.add_document(document)?;
        }
        Ok(())
    }

    /// Removes messages by id.
    pub fn delete(&self, ids: &[u64]) -> Result<()> {
        let writer = self.writer()?;
        for id in ids {
            writer.delete_term(Term::from_field_u64(self.fields.id, *id));
        }
        Ok(())
    }

    /// Removes every message.
    pub fn delete_all(&self) -> Result<()> {
        self.writer()?.delete_all_documents().map(drop)
    }

    /// Makes what was added and removed durable and searchable, with `payload` (what the index
    /// now holds, in the caller's words). Readers see it from the next [`Self::snapshot`].
    pub fn commit(&self, payload: &str) -> Result<()> {
        let mut writer = self.writer()?;
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(payload);
        prepared.commit()?;
        self.reader.reload()?;
        let fresh = Snapshot::new(self.reader.searcher(), self.fields, Some(payload.to_string()));
        *lock(&self.snapshot) = Arc::new(fresh);
        Ok(())
    }

    /// Waits for the writer's merges and drops it (at shutdown); later writes fail.
    pub fn close(self) -> Result<()> {
        match self.writer {
            Some(writer) => {
                writer.into_inner().unwrap_or_else(PoisonError::into_inner).wait_merging_threads()
            }
            None => Ok(()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes what is in `dir` (an index Tantivy cannot open, or of another version).
fn clear_directory(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}
