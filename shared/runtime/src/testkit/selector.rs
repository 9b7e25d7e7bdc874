//! Parsing label selector strings (`labelSelector=` query values) into kube's `Selector`, which
//! does the matching. kube can print selectors but not parse them, hence this small parser.

use kube::core::{Expression, Selector};

/// Parses `a=b,c==d,e!=f,g in (x,y),h notin (z),i,!j`.
pub(crate) fn parse(selector: &str) -> Result<Selector, String> {
    split_top_level(selector)
        .into_iter()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(requirement)
        .collect()
}

/// Splits at commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn requirement(r: &str) -> Result<Expression, String> {
    let invalid = || format!("unable to parse requirement: {r:?}");
    let key = |k: &str| {
        let k = k.trim();
        if k.is_empty() || k.contains(char::is_whitespace) {
            Err(invalid())
        } else {
            Ok(k.to_owned())
        }
    };
    if let Some((head, tail)) = r.split_once('(') {
        let values = tail.strip_suffix(')').ok_or_else(invalid)?;
        let values = values.split(',').map(|v| v.trim().to_owned()).collect();
        let mut words = head.split_whitespace();
        let (k, op) = (words.next(), words.next());
        if words.next().is_some() {
            return Err(invalid());
        }
        return match (k, op) {
            (Some(k), Some("in")) => Ok(Expression::In(key(k)?, values)),
            (Some(k), Some("notin")) => Ok(Expression::NotIn(key(k)?, values)),
            _ => Err(invalid()),
        };
    }
    if let Some(k) = r.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(key(k)?));
    }
    if let Some((k, v)) = r.split_once("!=") {
        return Ok(Expression::NotEqual(key(k)?, v.trim().to_owned()));
    }
    if let Some((k, v)) = r.split_once("==").or_else(|| r.split_once('=')) {
        return Ok(Expression::Equal(key(k)?, v.trim().to_owned()));
    }
    Ok(Expression::Exists(key(r)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use kube::core::SelectorExt;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    fn matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
        parse(selector).unwrap().matches(&labels(pairs))
    }

    #[test]
    fn operators() {
        let l = [("app", "web"), ("tier", "front")];
        assert!(matches("", &l));
        assert!(matches("app=web", &l));
        assert!(matches("app==web", &l));
        assert!(!matches("app=db", &l));
        assert!(matches("app!=db", &l));
        assert!(matches("missing!=db", &l));
        assert!(matches("app in (web, db)", &l));
        assert!(!matches("app in (db)", &l));
        assert!(matches("app notin (db)", &l));
        assert!(!matches("app notin (web,db)", &l));
        assert!(matches("missing notin (db)", &l));
        assert!(matches("tier", &l));
        assert!(!matches("missing", &l));
        assert!(matches("!missing", &l));
        assert!(!matches("!tier", &l));
    }

    #[test]
    fn lists_are_conjunctions() {
        let l = [("app", "web"), ("tier", "front")];
        assert!(matches("app=web,tier=front", &l));
        assert!(!matches("app=web,tier=back", &l));
        assert!(matches("app in (web,db),tier,!gone", &l));
    }

    #[test]
    fn rejects_nonsense() {
        for s in ["app in web", "app between (a)", "=x", "a b=c", "app in (a"] {
            assert!(parse(s).is_err(), "{s}");
        }
    }
}
