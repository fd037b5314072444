//! docs/scenarios.md lists every scenario field, and only real ones: the field list is
//! taken from serde itself (the names each struct's derived `Deserialize` asks for), so a
//! field added, renamed or removed without its line in the table fails here.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// Every field path of a `Scenario`: `miners.count`, `faults[].kind`, `sv1_pools.<label>.kind`.
fn scenario_fields() -> BTreeSet<String> {
    let found = RefCell::new(Found::default());
    // Each pass follows one path down and stops at its end, so a value that cannot be
    // made up (a side's name, a node that is both started and reached) ends that pass
    // only after the names on its path were recorded.
    let mut pending = vec![Vec::<String>::new()];
    while let Some(focus) = pending.pop() {
        let probe = FieldProbe {
            found: &found,
            path: vec![],
            focus: &focus,
        };
        let _ = <model::scenario::Scenario as serde::Deserialize>::deserialize(probe);
        let inner = found.borrow_mut().structs.split_off(0);
        for (path, fields) in inner {
            for field in fields {
                let mut next = path.clone();
                next.push(field);
                if found.borrow_mut().seen.insert(next.clone()) {
                    pending.push(next);
                }
            }
        }
    }
    let seen = found.into_inner().seen;
    // A path is a field of its own when nothing below it was found.
    seen.iter()
        .filter(|p| !seen.iter().any(|q| q.len() > p.len() && q.starts_with(p)))
        .map(|p| p.join(".").replace(".[]", "[]"))
        .collect()
}

#[derive(Default)]
struct Found {
    /// Structs met on the way: their path and the field names serde asked for.
    structs: Vec<(Vec<String>, Vec<String>)>,
    seen: BTreeSet<Vec<String>>,
}

struct FieldProbe<'a> {
    found: &'a RefCell<Found>,
    path: Vec<String>,
    focus: &'a [String],
}

#[derive(Debug)]
struct Stop(String);

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Stop {}
impl de::Error for Stop {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Stop(msg.to_string())
    }
}

impl<'a> FieldProbe<'a> {
    fn below(&self, segment: &str) -> FieldProbe<'a> {
        let mut path = self.path.clone();
        path.push(segment.to_string());
        FieldProbe {
            found: self.found,
            path,
            focus: self.focus,
        }
    }

    /// The next field on the focused path, when this value lies on it.
    fn next_on_focus(&self) -> Option<&'a String> {
        (self.focus.len() > self.path.len() && self.focus.starts_with(&self.path))
            .then(|| &self.focus[self.path.len()])
    }
}

impl<'de> de::Deserializer<'de> for FieldProbe<'_> {
    type Error = Stop;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        let names = fields.iter().map(|f| f.to_string()).collect();
        self.found
            .borrow_mut()
            .structs
            .push((self.path.clone(), names));
        let field = self.next_on_focus().cloned();
        visitor.visit_map(OneEntry {
            probe: self,
            key: field,
            segment: None,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        // A table of the user's own keys (`sv1_pools.<label>`): one made-up key.
        let key = "<label>".to_string();
        let segment = Some(key.clone());
        visitor.visit_map(OneEntry {
            probe: self,
            key: Some(key),
            segment,
        })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_seq(OneElement(Some(self)))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop(format!("a value at {}", self.path.join("."))))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct tuple tuple_struct enum identifier ignored_any
    }
}

/// A struct's or map's one entry: the focused field (or none, and the pass ends).
struct OneEntry<'a> {
    probe: FieldProbe<'a>,
    key: Option<String>,
    /// The path segment of a map's made-up key; a struct's field is its own segment.
    segment: Option<String>,
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        match &self.key {
            Some(key) => seed.deserialize(key.clone().into_deserializer()).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        let key = self.key.take().expect("a value follows its key");
        let segment = self.segment.take().unwrap_or(key);
        seed.deserialize(self.probe.below(&segment))
    }
}

struct OneElement<'a>(Option<FieldProbe<'a>>);

impl<'de> SeqAccess<'de> for OneElement<'_> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        match self.0.take() {
            Some(probe) => seed.deserialize(probe.below("[]")).map(Some),
            None => Ok(None),
        }
    }
}

/// The field names of the table's first column, each in backticks.
fn documented_fields(doc: &str) -> Vec<(String, String)> {
    doc.lines()
        .filter(|line| line.starts_with("| `"))
        .flat_map(|line| {
            let cells: Vec<&str> = line.split(" | ").collect();
            let default = cells
                .get(1)
                .map(|c| c.trim().to_string())
                .unwrap_or_default();
            cells[0]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(move |name| (name.to_string(), default.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn scenarios_md_lists_every_field_with_its_default_and_no_other() {
    let fields = scenario_fields();
    assert!(
        fields.contains("miners.count") && fields.contains("sv1_pools.<label>.kind"),
        "the probe found the fields: {fields:?}"
    );
    // The clone the test runs in (a test binary can be another clone's build).
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo and nextest");
    let doc =
        std::fs::read_to_string(std::path::Path::new(&crate_dir).join("../../docs/scenarios.md"))
            .expect("docs/scenarios.md");
    let documented = documented_fields(&doc);
    let names: BTreeSet<String> = documented.iter().map(|(n, _)| n.clone()).collect();
    let missing: Vec<_> = fields.difference(&names).collect();
    let unknown: Vec<_> = names.difference(&fields).collect();
    assert!(
        missing.is_empty(),
        "docs/scenarios.md lacks these fields: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "docs/scenarios.md names fields a scenario does not have: {unknown:?}"
    );
    for (name, default) in &documented {
        assert!(
            !default.is_empty(),
            "docs/scenarios.md gives no default for `{name}`"
        );
    }
}
