"""LLM configuration from the environment, and the pure call identity (prompt hash, parameters) replay keys on."""

from __future__ import annotations

import hashlib
import json

import pytest

from actors.llm.client import LlmClient, call_parameters, checked_messages, prompt_sha256
from actors.llm.config import LlmConfig
from events.errors import LlmError

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def test_no_base_url_means_offline():
    assert LlmConfig.from_env({}) is None
    assert LlmConfig.from_env({"PALIMPSEST_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-x"}) is None
    assert LlmConfig.from_env({"PALIMPSEST_LLM_BASE_URL": "  "}) is None


def test_from_env_reads_every_setting():
    config = LlmConfig.from_env(
        {
            "PALIMPSEST_LLM_BASE_URL": "http://127.0.0.1:11434/v1/",
            "PALIMPSEST_LLM_API_KEY": "sk-secret",
            "PALIMPSEST_LLM_MODEL": "llama3.1:8b",
            "PALIMPSEST_LLM_TIMEOUT_S": "12.5",
            "PALIMPSEST_LLM_MAX_RETRIES": "0",
            "PALIMPSEST_LLM_BACKOFF_BASE_S": "0.1",
            "PALIMPSEST_LLM_TEMPERATURE": "0.2",
            "PALIMPSEST_LLM_MAX_TOKENS": "256",
        }
    )
    assert config == LlmConfig(
        base_url="http://127.0.0.1:11434/v1",
        model="llama3.1:8b",
        api_key="sk-secret",
        timeout_s=12.5,
        max_retries=0,
        backoff_base_s=0.1,
        temperature=0.2,
        max_tokens=256,
    )
    assert "sk-secret" not in repr(config)


def test_openai_variables_are_fallbacks():
    env = {"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "sk-o", "PALIMPSEST_LLM_MODEL": "m"}
    config = LlmConfig.from_env(env)
    assert (config.base_url, config.api_key) == ("https://api.openai.com/v1", "sk-o")
    env |= {"PALIMPSEST_LLM_BASE_URL": "http://vllm:8000/v1", "PALIMPSEST_LLM_API_KEY": "sk-p"}
    config = LlmConfig.from_env(env)
    assert (config.base_url, config.api_key) == ("http://vllm:8000/v1", "sk-p")


def test_openai_base_url_without_a_model_leaves_the_memory_offline():
    """An agent's own OPENAI_BASE_URL does not make every Memory.open fail; the memory's own variable does."""
    assert LlmConfig.from_env({"OPENAI_BASE_URL": "http://localhost:11434/v1", "OPENAI_API_KEY": "sk-o"}) is None
    with pytest.raises(LlmError, match="PALIMPSEST_LLM_BASE_URL is set but PALIMPSEST_LLM_MODEL is not"):
        LlmConfig.from_env({"PALIMPSEST_LLM_BASE_URL": "http://localhost:11434/v1", "OPENAI_BASE_URL": "http://x/v1"})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PALIMPSEST_LLM_BASE_URL": "localhost:11434"}, "PALIMPSEST_LLM_BASE_URL='localhost:11434' is not an http"),
        ({"PALIMPSEST_LLM_BASE_URL": "", "OPENAI_BASE_URL": "ftp://x"}, "OPENAI_BASE_URL='ftp://x' is not an http"),
        ({"PALIMPSEST_LLM_MODEL": ""}, "PALIMPSEST_LLM_BASE_URL is set but PALIMPSEST_LLM_MODEL is not"),
        ({"PALIMPSEST_LLM_TIMEOUT_S": "soon"}, "PALIMPSEST_LLM_TIMEOUT_S='soon' is not a number of seconds > 0"),
        ({"PALIMPSEST_LLM_TIMEOUT_S": "0"}, "PALIMPSEST_LLM_TIMEOUT_S=0.0 is not a number of seconds > 0"),
        ({"PALIMPSEST_LLM_MAX_RETRIES": "2.5"}, "PALIMPSEST_LLM_MAX_RETRIES='2.5' is not an integer >= 0"),
        ({"PALIMPSEST_LLM_MAX_RETRIES": "-1"}, "PALIMPSEST_LLM_MAX_RETRIES=-1 is not an integer >= 0"),
        ({"PALIMPSEST_LLM_TEMPERATURE": "3"}, "PALIMPSEST_LLM_TEMPERATURE=3.0 is not a number from 0 to 2"),
        ({"PALIMPSEST_LLM_MAX_TOKENS": "0"}, "PALIMPSEST_LLM_MAX_TOKENS=0 is not an integer > 0"),
        ({"PALIMPSEST_LLM_TEMPERATURE": "nan"}, "PALIMPSEST_LLM_TEMPERATURE=nan"),
    ],
)
def test_bad_environment_values_name_the_variable(env, message):
    with pytest.raises(LlmError) as caught:
        LlmConfig.from_env({"PALIMPSEST_LLM_BASE_URL": "http://h/v1", "PALIMPSEST_LLM_MODEL": "m"} | env)
    assert message in str(caught.value)


def test_direct_construction_is_validated():
    with pytest.raises(LlmError, match="LlmConfig.timeout_s=-1 is not"):
        LlmConfig(base_url="http://h/v1", model="m", timeout_s=-1)
    with pytest.raises(LlmError, match="LlmConfig.max_retries=True is not"):
        LlmConfig(base_url="http://h/v1", model="m", max_retries=True)
    with pytest.raises(LlmError, match="LlmConfig.model is empty"):
        LlmConfig(base_url="http://h/v1", model=" ")
    with pytest.raises(LlmError, match="base_url=None is not an http"):
        LlmConfig(base_url=None, model="m")


def test_client_without_configuration_raises():
    with pytest.raises(LlmError, match="set PALIMPSEST_LLM_BASE_URL"):
        LlmClient(LlmConfig.from_env({}))


def test_prompt_hash_is_the_sha256_of_canonical_model_messages_parameters():
    messages = checked_messages([{"role": "user", "content": "我喜欢咖啡"}])
    parameters = call_parameters(0.0, 128, SCHEMA, {"seed": 7})
    canonical = json.dumps(
        {"model": "m", "messages": messages, "parameters": parameters},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )
    assert prompt_sha256("m", messages, parameters) == hashlib.sha256(canonical.encode()).hexdigest()
    assert prompt_sha256("m", messages, dict(reversed(parameters.items()))) == prompt_sha256("m", messages, parameters)
    assert prompt_sha256("other", messages, parameters) != prompt_sha256("m", messages, parameters)
    other_schema = call_parameters(0.0, 128, {"type": "array"}, {"seed": 7})
    assert prompt_sha256("m", messages, other_schema) != prompt_sha256("m", messages, parameters)


def test_call_parameters_and_messages_are_checked():
    assert call_parameters(0.3, 64, SCHEMA, {"top_p": 0.9})["top_p"] == 0.9
    assert call_parameters(0.3, 64, SCHEMA, {"temperature": 0.7})["temperature"] == 0.7
    with pytest.raises(LlmError, match="extra parameters must be scalars"):
        call_parameters(0.0, 64, SCHEMA, {"response_format": "text"})
    with pytest.raises(LlmError, match="extra parameters must be scalars"):
        call_parameters(0.0, 64, SCHEMA, {"stop": ["\n"]})
    with pytest.raises(LlmError, match="non-empty list"):
        checked_messages([])
    with pytest.raises(LlmError, match=r"messages\[1\] needs a role"):
        checked_messages([{"role": "user", "content": "a"}, {"role": "narrator", "content": "b"}])
