"""The same tree walk as sglang 0.5.12 does it -- its traverse_tree, which converts the
tensor elements with int(), read from its wheel (argv[1]) -- over sglang 0.5.11's grammar
object, with the shims off."""
import ast
import json
import sys
from typing import Optional

import torch
from draft_tree import grammar_object, walk

from sglang.srt.constrained.base_grammar_backend import BaseGrammarObject
from sglang.srt.constrained.xgrammar_backend import XGrammarGrammar

with open(sys.argv[1], encoding="utf-8") as f:
    tree = ast.parse(f.read())
[node] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "traverse_tree"]
scope = {"torch": torch, "Optional": Optional, "BaseGrammarObject": BaseGrammarObject}
exec(compile(ast.Module(body=[node], type_ignores=[]), sys.argv[1], "exec"), scope)
print(json.dumps({"walk": walk(scope["traverse_tree"], grammar_object(XGrammarGrammar))}))
