//! Settings named by words (`HIPFILE_BACKEND=bounce`, `hipFileParamPageCache`): each type's
//! words in one table, from which parsing, printing and the words an error lists all come.

/// A setting whose values are words.
pub trait Words: Copy + PartialEq + Sized + 'static {
    /// Every value with its word, in the order the documentation lists them.
    const WORDS: &'static [(&'static str, Self)];

    /// The value named `word` (any case, blanks around it ignored).
    fn parse(word: &str) -> Option<Self> {
        let word = word.trim().to_ascii_lowercase();
        Self::WORDS.iter().find(|(w, _)| *w == word).map(|(_, v)| *v)
    }

    /// Its word.
    fn word(self) -> &'static str {
        Self::WORDS.iter().find(|(_, v)| *v == self).map_or("?", |(w, _)| w)
    }

    /// Every word, as an error lists them (`auto, keep, bypass`).
    fn words() -> String {
        Self::WORDS.iter().map(|(w, _)| *w).collect::<Vec<_>>().join(", ")
    }
}
