//! Words as FTS5's `unicode61` tokenizer finds them (runs of letters and digits), folded to
//! lower case and to ASCII, and the index's terms made of them.

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, SimpleTokenizer, TextAnalyzer, TokenStream,
};

/// Splits text into folded words.
pub(crate) struct Words {
    analyzer: TextAnalyzer,
}

impl Words {
    pub(crate) fn new() -> Self {
        let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .filter(AsciiFoldingFilter)
            .build();
        Self { analyzer }
    }

    /// `text`'s words, in order.
    pub(crate) fn split(&mut self, text: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut stream = self.analyzer.token_stream(text);
        while stream.advance() {
            words.push(stream.token().text.clone());
        }
        words
    }
}

/// The index's term for `word` in `project`: each project's words are terms of their own.
pub(crate) fn term_text(project: u64, word: &str) -> String {
    format!("{project}:{word}")
}
