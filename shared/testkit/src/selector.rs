//! Parsing selector strings: label selectors (`labelSelector=`) into kube's `Selector`, which
//! does the matching (kube can print selectors but not parse them, hence this small parser), and
//! field selectors (`fieldSelector=`) over the fields every resource supports.

use kube::core::{Expression, Selector};
use serde_json::Value;

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

/// A field every resource can be selected by. The API server supports more for some kinds
/// (`spec.nodeName` of Pods, `type` of Secrets, ...); those are not modelled and are rejected as
/// an unsupported field label, so a test cannot silently match everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

/// One `field=value` or `field!=value` term.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    field: Field,
    value: String,
    equal: bool,
}

/// A parsed `fieldSelector`: a conjunction of terms; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector(Vec<FieldRequirement>);

impl FieldSelector {
    /// Selects the object named `name` (what a watch of one object by path means).
    pub fn name(name: &str) -> Self {
        Self(vec![FieldRequirement {
            field: Field::Name,
            value: name.to_owned(),
            equal: true,
        }])
    }

    /// Adds the terms of `other`.
    pub fn and(mut self, other: Self) -> Self {
        self.0.extend(other.0);
        self
    }

    /// Whether `obj` has every selected field value (a cluster-scoped object's namespace is "").
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|r| {
            let pointer = match r.field {
                Field::Name => "/metadata/name",
                Field::Namespace => "/metadata/namespace",
            };
            let actual = obj.pointer(pointer).and_then(Value::as_str).unwrap_or("");
            (actual == r.value) == r.equal
        })
    }
}

/// Parses `metadata.name=a,metadata.namespace!=b` (`=`, `==`, `!=`). Errors carry the API
/// server's message.
pub(crate) fn parse_fields(selector: &str) -> Result<FieldSelector, String> {
    selector
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|term| {
            let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, v, true)
            } else {
                return Err(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                ));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => return Err(format!("field label not supported: {other}")),
            };
            Ok(FieldRequirement {
                field,
                value: value.trim().to_owned(),
                equal,
            })
        })
        .collect::<Result<_, _>>()
        .map(FieldSelector)
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

    #[test]
    fn field_selectors() {
        let obj = serde_json::json!({ "metadata": { "name": "web", "namespace": "shop" } });
        let cluster = serde_json::json!({ "metadata": { "name": "shop" } });
        let m = |s: &str, o: &Value| parse_fields(s).unwrap().matches(o);
        assert!(m("", &obj));
        assert!(m("metadata.name=web", &obj));
        assert!(m("metadata.name==web,metadata.namespace=shop", &obj));
        assert!(!m("metadata.name=web,metadata.namespace=other", &obj));
        assert!(m("metadata.name!=db", &obj));
        assert!(!m("metadata.name!=web", &obj));
        assert!(m("metadata.namespace=", &cluster));
        assert!(m("metadata.namespace!=shop", &cluster));
        assert!(FieldSelector::name("web").matches(&obj));
        assert!(!FieldSelector::name("db").matches(&obj));
        assert_eq!(
            parse_fields("spec.nodeName=a").unwrap_err(),
            "field label not supported: spec.nodeName"
        );
        assert!(parse_fields("metadata.name").is_err());
    }
}
