//! Invalid UTF-8: an element (or member) holding any is parsed from a copy
//! with each invalid sequence replaced by U+FFFD, as browsers and Perfetto
//! decode such files, and counted ([`crate::Skipped::invalid_utf8`]).
//! Strings then hold the replacement character; error offsets are mapped
//! back to the file's bytes. Valid text never comes here: the check is one
//! `from_utf8` per element, which the parser needs anyway.

use crate::parse::{Parsed, Repairs};

/// What `parse` gives for `text` with its invalid UTF-8 replaced, its
/// strings owned (the repaired copy is gone when this returns) and any
/// error offset in `text`.
#[cold]
pub(crate) fn parse_lossy(text: &[u8], parse: fn(&str) -> Parsed) -> Parsed {
    let fixed = String::from_utf8_lossy(text);
    let (parsed, repairs) = match parse(&fixed) {
        Parsed::Syntax { offset, message } => {
            return Parsed::Syntax {
                offset: original_offset(text, offset),
                message,
            }
        }
        Parsed::Repaired { parsed, repairs } => (*parsed, repairs),
        other => (other, Repairs::default()),
    };
    Parsed::Repaired {
        parsed: Box::new(parsed.into_owned(&fixed)),
        repairs: Repairs {
            invalid_utf8: true,
            ..repairs
        },
    }
}

/// The offset in `text` of byte `at` of `String::from_utf8_lossy(text)`:
/// each maximal invalid sequence there is one 3-byte U+FFFD. An offset
/// inside a replacement maps to the start of the sequence it replaced.
pub(crate) fn original_offset(text: &[u8], at: usize) -> usize {
    let (mut orig, mut fixed) = (0, 0);
    for chunk in text.utf8_chunks() {
        let valid = chunk.valid().len();
        if at < fixed + valid {
            return orig + (at - fixed);
        }
        orig += valid;
        fixed += valid;
        if chunk.invalid().is_empty() {
            continue;
        }
        if at < fixed + '\u{fffd}'.len_utf8() {
            return orig;
        }
        orig += chunk.invalid().len();
        fixed += '\u{fffd}'.len_utf8();
    }
    orig + (at - fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_back_through_replacements() {
        let text = b"ab\xffcd\xe2\x82ef";
        let fixed = String::from_utf8_lossy(text);
        assert_eq!(fixed, "ab\u{fffd}cd\u{fffd}ef");
        for (want, c) in [(0, 'a'), (3, 'c'), (4, 'd'), (7, 'e'), (8, 'f')] {
            let at = fixed.find(c).unwrap();
            assert_eq!(original_offset(text, at), want, "{c}");
        }
        assert_eq!(original_offset(text, 3), 2, "inside the first U+FFFD");
        assert_eq!(original_offset(text, fixed.len()), text.len());
        assert_eq!(original_offset(b"plain", 3), 3);
    }
}
