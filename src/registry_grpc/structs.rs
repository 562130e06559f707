//! JSON to `google.protobuf.Struct` (pure): how `ListPackageCustomSchemas` sends a blob
//! (upstream: `structpb.NewStruct` of the unmarshalled blob, so numbers become doubles).

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value as ProtoValue};
use serde_json::Value;

/// The `Struct` of a JSON object given as text.
pub fn struct_of(json: &str) -> Result<Struct, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(fields)) => Ok(Struct {
            fields: fields
                .into_iter()
                .map(|(key, value)| (key, value_of(value)))
                .collect(),
        }),
        Ok(_) => Err("the blob is not a JSON object".to_owned()),
        Err(error) => Err(error.to_string()),
    }
}

fn value_of(value: Value) -> ProtoValue {
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => Kind::ListValue(ListValue {
            values: items.into_iter().map(value_of).collect(),
        }),
        Value::Object(fields) => Kind::StructValue(Struct {
            fields: fields
                .into_iter()
                .map(|(key, value)| (key, value_of(value)))
                .collect(),
        }),
    };
    ProtoValue { kind: Some(kind) }
}

/// The JSON of a `Struct` (for clients and tests).
pub fn json_of(value: &Struct) -> Value {
    Value::Object(
        value
            .fields
            .iter()
            .map(|(key, value)| (key.clone(), json_value(value)))
            .collect(),
    )
}

fn json_value(value: &ProtoValue) -> Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::NumberValue(n)) => {
            serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number)
        }
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::ListValue(list)) => Value::Array(list.values.iter().map(json_value).collect()),
        Some(Kind::StructValue(fields)) => json_of(fields),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_round_trip_with_numbers_as_doubles() {
        let blob = r#"{"schema":"acme.note","package":"p","n":3,"ok":true,"none":null,"list":["a",{"b":1.5}]}"#;
        let converted = struct_of(blob).unwrap();
        assert_eq!(
            json_of(&converted),
            serde_json::json!({"schema":"acme.note","package":"p","n":3.0,"ok":true,"none":null,"list":["a",{"b":1.5}]})
        );
        assert!(struct_of("[1]").is_err());
        assert!(struct_of("{").is_err());
    }
}
