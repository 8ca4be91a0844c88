"""JSON schemas and texts: the regex a builder makes from each schema, matched against each
text, gives a table of booleans."""
import json

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name", "age"]},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "n": {"type": "number"}},
     "required": ["kind"]},
]
TEXTS = ['{"name": "x", "age": 3}', '{"name":"x","age":3}', '{"age": 3, "name": "x"}',
         '{"name": "x"}', '{"name": 1, "age": 3}', '[true]', '[true, false, true]', '[]',
         '[true, true, true, true]', '{"kind": "a"}', '{"kind": "c"}', '{"kind": "b", "n": 1.5}',
         '{"kind": "a", "n": -2}', 'null']


def table(build):
    import re
    out = []
    for schema in SCHEMAS:
        pattern = re.compile(build(json.dumps(schema)))
        out.append([bool(pattern.fullmatch(t)) for t in TEXTS])
    return out
