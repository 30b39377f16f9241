"""Configuration: defaults < YAML file < environment < explicit overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from engram_md.core.config import Config, load_config
from engram_md.core.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parent.parent / "config.example.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    cfg = load_config(env={})
    assert cfg == Config()
    assert cfg.memory_dir == Path("memory") and cfg.state_dir == Path("state")
    assert cfg.buffer.max_turns is None and cfg.buffer.max_minutes == 15
    assert cfg.buffer.batch_turns(llm=True) == 10 and cfg.buffer.batch_turns(llm=False) == 5
    assert cfg.llm.api_key is None and cfg.llm.base_url is None
    assert cfg.llm.enabled is False
    assert cfg.embedding.provider == "local"


def test_yaml_file_sets_values(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
memory_dir: /data/memory
buffer:
  max_turns: 8
  max_minutes: 2.5
llm:
  model: my-model
  api: chat
signals:
  high_patterns: ['(?i)remember this']
""",
    )
    cfg = load_config(path, env={})
    assert cfg.memory_dir == Path("/data/memory")
    assert cfg.buffer.max_turns == 8 and cfg.buffer.max_minutes == 2.5
    assert cfg.buffer.fsync == "always"  # untouched keys keep their defaults
    assert cfg.llm.model == "my-model" and cfg.llm.api == "chat"
    assert cfg.signals.high_patterns == ["(?i)remember this"]


def test_empty_file_is_all_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing set\n"), env={}) == Config()


def test_env_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "memory_dir: from-file\nllm:\n  api_key: file-key\n  model: m\n")
    env = {
        "OPENAI_API_KEY": "sk-env",
        "OPENAI_BASE_URL": "http://127.0.0.1:9999/v1",
        "ENGRAM_MEMORY_DIR": str(tmp_path / "mem"),
    }
    cfg = load_config(path, env=env)
    assert cfg.llm.api_key == "sk-env"
    assert cfg.llm.base_url == "http://127.0.0.1:9999/v1"
    assert cfg.llm.model == "m"  # keys the env does not touch stay as the file said
    assert cfg.memory_dir == tmp_path / "mem"


def test_empty_env_values_do_not_override(tmp_path: Path) -> None:
    path = write(tmp_path, "llm:\n  api_key: file-key\n")
    cfg = load_config(path, env={"OPENAI_API_KEY": "", "ENGRAM_MEMORY_DIR": ""})
    assert cfg.llm.api_key == "file-key"
    assert cfg.memory_dir == Path("memory")


def test_process_environment_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_STATE_DIR", str(tmp_path / "st"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-process")
    monkeypatch.delenv("ENGRAM_CONFIG", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    cfg = load_config()
    assert cfg.state_dir == tmp_path / "st"
    assert cfg.llm.api_key == "sk-process"


def test_engram_config_env_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "buffer:\n  max_turns: 3\n")
    assert load_config(env={"ENGRAM_CONFIG": str(path)}).buffer.max_turns == 3


def test_explicit_overrides_win_and_none_is_ignored(tmp_path: Path) -> None:
    path = write(tmp_path, "llm:\n  model: file-model\n")
    cfg = load_config(
        path,
        env={"ENGRAM_LLM_MODEL": "env-model"},
        overrides={"llm.model": "flag-model", "memory_dir": None, "buffer.max_turns": 2},
    )
    assert cfg.llm.model == "flag-model"
    assert cfg.memory_dir == Path("memory")
    assert cfg.buffer.max_turns == 2


@pytest.mark.parametrize(
    ("api_key", "base_url", "enabled"),
    [(None, None, False), ("sk-x", None, True), (None, "http://localhost:8080/v1", True)],
)
def test_llm_enabled(api_key: str | None, base_url: str | None, enabled: bool) -> None:
    env = {}
    if api_key:
        env["OPENAI_API_KEY"] = api_key
    if base_url:
        env["OPENAI_BASE_URL"] = base_url
    assert load_config(env=env).llm.enabled is enabled


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("memroy_dir: typo\n", "memroy_dir"),
        ("llm:\n  modle: x\n", "llm.modle"),
        ("buffer:\n  max_turns: 5\n  max_mins: 3\n", "buffer.max_mins"),
    ],
)
def test_unknown_key_is_a_config_error(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert where in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("buffer:\n  max_turns: 0\n", "buffer.max_turns"),
        ("buffer:\n  max_minutes: soon\n", "buffer.max_minutes"),
        ("llm:\n  api: grpc\n", "llm.api"),
        ("recall:\n  port: 70000\n", "recall.port"),
    ],
)
def test_bad_value_is_a_config_error(tmp_path: Path, text: str, where: str) -> None:
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        load_config(write(tmp_path, text), env={})


@pytest.mark.parametrize(
    "text", ["llm: [unclosed\n", "buffer:\n  max_turns: 5\n max_minutes: 3\n", "a: b: c\n"]
)
def test_bad_yaml_is_a_config_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, text), env={})


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path, text), env={})


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml", env={})


def test_config_is_frozen() -> None:
    cfg = load_config(env={})
    with pytest.raises(ValidationError):
        cfg.buffer.max_turns = 9  # type: ignore[misc]


def test_example_file_documents_every_key_with_its_default() -> None:
    assert load_config(EXAMPLE, env={}) == Config()
    written = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    for name, info in Config.model_fields.items():
        assert name in written, f"config.example.yaml lacks {name}"
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            missing = set(section.model_fields) - set(written[name])
            assert not missing, f"config.example.yaml lacks {name}.{sorted(missing)}"
