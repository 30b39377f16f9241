"""What engram-md asks pip to install, and the model files it ships itself."""

from __future__ import annotations

import hashlib
import importlib.metadata
import tomllib
from pathlib import Path

from tokenizers import Tokenizer

from engram_md.text.embeddings import minilm_tokenizer_path

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def _declared() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [str(d).split(";")[0].strip() for d in data["project"]["dependencies"]]


def _name(requirement: str) -> str:
    for cut in "<>=!~[ ":
        requirement = requirement.split(cut)[0]
    return requirement.lower().replace("_", "-")


def test_no_sdk_is_installed_for_one_file() -> None:
    """The model router SDK that once shipped the tokenizer (and pulled python-dotenv) is not
    a dependency, neither in pyproject nor in the installed metadata."""
    names = {_name(r) for r in _declared()}
    assert "tryaii" not in names
    assert "python-dotenv" not in names
    installed = {_name(r) for r in importlib.metadata.requires("engram-md") or []}
    assert "tryaii" not in installed


def test_every_dependency_is_explained_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Dependencies: why each one is there", 1)[1].split("\n## ", 1)[0]
    missing = [_name(r) for r in _declared() if f"`{_name(r)}`" not in section]
    assert missing == []


def test_the_shipped_tokenizer_is_the_models_own() -> None:
    path = minilm_tokenizer_path()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == TOKENIZER_SHA256
    tokenizer = Tokenizer.from_file(str(path))
    encoding = tokenizer.encode("Dana prefers uv over pip")
    ids = [i for i, real in zip(encoding.ids, encoding.attention_mask, strict=True) if real]
    # [CLS] dana prefers uv over pip [SEP], uncased WordPiece ids of the BERT vocabulary.
    assert ids[0] == 101 and ids[-1] == 102
    assert tokenizer.token_to_id("dana") == ids[1]
