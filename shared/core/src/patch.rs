//! Building minimal merge patches.

use serde_json::Value;

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: changed members only, `null` for
/// members `new` no longer has, arrays whole. Status writers need it because serde skips `None`:
/// a plain serialization would leave cleared optional fields behind on the server.
pub fn merge_diff(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = serde_json::Map::new();
            for (key, value) in n {
                match o.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        out.insert(key.clone(), merge_diff(previous, value));
                    }
                    None => {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in o.keys().filter(|k| !n.contains_key(*k)) {
                out.insert(key.clone(), Value::Null);
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nulls_removed_members_and_leaves_unchanged_ones_out() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1], "gone": true});
        let new = json!({"a": 1, "b": {"c": 5}, "e": [1, 2], "added": "x"});
        assert_eq!(
            merge_diff(&old, &new),
            json!({"b": {"c": 5, "d": null}, "e": [1, 2], "added": "x", "gone": null})
        );
        assert_eq!(merge_diff(&new, &new), json!({}));
    }

    #[test]
    fn applying_the_diff_to_old_gives_new() {
        let old = json!({"a": {"b": 1, "c": [1, 2]}, "d": "x"});
        let new = json!({"a": {"c": [3]}, "e": {"f": null}});
        let mut patched = old.clone();
        json_merge(&mut patched, &merge_diff(&old, &new));
        assert_eq!(patched, json!({"a": {"c": [3]}, "e": {}}));
    }

    /// RFC 7386 applied, to check the diff round-trips (null members are dropped, as servers do).
    fn json_merge(target: &mut Value, patch: &Value) {
        if let Value::Object(p) = patch {
            if !target.is_object() {
                *target = json!({});
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        json_merge(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        } else {
            *target = patch.clone();
        }
    }
}
