//! Positional or named parameters, checked the way bitcoind checks them.

use super::{RpcError, RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_TYPE_ERROR};
use serde_json::{Map, Value};

/// A method's signature: parameter names, how many are required, and its usage line.
pub struct Signature {
    pub names: &'static [&'static str],
    pub required: usize,
    pub usage: &'static str,
}

/// Parameters normalised to positions.
pub struct Params(Vec<Value>);

impl Params {
    pub fn parse(sig: &Signature, raw: Value) -> Result<Params, RpcError> {
        let usage = || RpcError::new(RPC_MISC_ERROR, sig.usage);
        let values = match raw {
            Value::Array(values) => {
                if values.len() > sig.names.len() {
                    return Err(usage());
                }
                values
            }
            Value::Object(map) => named(sig, map)?,
            _ => Vec::new(),
        };
        let given = values.iter().take_while(|v| !v.is_null()).count();
        if given < sig.required {
            return Err(usage());
        }
        Ok(Params(values))
    }

    fn get(&self, i: usize) -> Option<&Value> {
        self.0.get(i).filter(|v| !v.is_null())
    }

    pub fn str(&self, i: usize) -> Result<Option<&str>, RpcError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(type_error(other, "string")),
        }
    }

    pub fn required_str(&self, i: usize) -> Result<&str, RpcError> {
        Ok(self
            .str(i)?
            .expect("required parameters are checked in parse"))
    }

    pub fn u64(&self, i: usize) -> Result<Option<u64>, RpcError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
                RpcError::new(RPC_INVALID_PARAMETER, format!("{n} is out of range"))
            }),
            Some(other) => Err(type_error(other, "number")),
        }
    }

    pub fn bool(&self, i: usize) -> Result<Option<bool>, RpcError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(type_error(other, "bool")),
        }
    }

    /// A verbosity given as a number or, as older clients do, a bool.
    pub fn verbosity(&self, i: usize, default: u64) -> Result<u64, RpcError> {
        match self.get(i) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(u64::from(*b)),
            Some(Value::Number(_)) => Ok(self.u64(i)?.unwrap_or(default)),
            Some(other) => Err(type_error(other, "number")),
        }
    }

    pub fn object(&self, i: usize) -> Result<Option<&Map<String, Value>>, RpcError> {
        match self.get(i) {
            None => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(other) => Err(type_error(other, "object")),
        }
    }
}

fn named(sig: &Signature, map: Map<String, Value>) -> Result<Vec<Value>, RpcError> {
    let mut values = vec![Value::Null; sig.names.len()];
    for (key, value) in map {
        let Some(pos) = sig.names.iter().position(|n| *n == key) else {
            return Err(RpcError::new(
                RPC_INVALID_PARAMETER,
                format!("Unknown named parameter {key}"),
            ));
        };
        values[pos] = value;
    }
    while values.last().is_some_and(Value::is_null) {
        values.pop();
    }
    Ok(values)
}

/// bitcoind's wording for a parameter of the wrong JSON type.
pub fn type_error(value: &Value, expected: &str) -> RpcError {
    let actual = match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    RpcError::new(
        RPC_TYPE_ERROR,
        format!("JSON value of type {actual} is not of expected type {expected}"),
    )
}
