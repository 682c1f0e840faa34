from tuiapp.common.redact import Redactor, is_secret_name, redact_argv, redact_env, secret_values

KEY = "sk-live-9f8e7d6c5b4a"


def test_secret_names_match_whole_words_only():
    for name in ("--api-key", "--admin-api-key", "--hf-token", "--db-password", "--client-secret",
                 "HF_TOKEN", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "HUGGING_FACE_HUB_TOKEN"):
        assert is_secret_name(name), name
    for name in ("--tokenizer-path", "--max-total-tokens", "--speculative-num-draft-tokens",
                 "--ssl-keyfile", "--skip-tokenizer-init", "TOKENIZERS_PARALLELISM", "CUDA_VISIBLE_DEVICES"):
        assert not is_secret_name(name), name


def test_redact_argv_masks_both_forms_and_keeps_everything_else():
    argv = ["python", "-m", "sglang.launch_server", "--api-key", KEY, "--admin-api-key=adm-123456",
            "--hf-token", "hf_abcdefgh", "--tokenizer-path", "/models/tok", "--port", "8000"]
    assert redact_argv(argv) == ["python", "-m", "sglang.launch_server", "--api-key", "***",
                                 "--admin-api-key=***", "--hf-token", "***", "--tokenizer-path",
                                 "/models/tok", "--port", "8000"]
    # A secret-named switch followed by another flag has no value to mask.
    assert redact_argv(["--use-token", "--port", "1"]) == ["--use-token", "--port", "1"]


def test_redact_env():
    env = {"HF_TOKEN": "hf_x1y2z3w4", "NCCL_ALGO": "Tree", "OPENAI_API_KEY": "sk-1", "EMPTY_KEY": ""}
    assert redact_env(env) == {"HF_TOKEN": "***", "NCCL_ALGO": "Tree", "OPENAI_API_KEY": "***", "EMPTY_KEY": ""}


def test_secret_values_skip_switch_like_env_values():
    values = secret_values(["--api-key", KEY, "--port", "1"], {"HF_TOKEN": "hf_x1y2z3w4", "USE_KEY": "1",
                                                               "SOME_TOKEN": "true", "PATH": "/bin"})
    assert values == [KEY, "hf_x1y2z3w4"]


def test_redactor_masks_text_and_bytes():
    r = Redactor([KEY, None, "ab"])  # "ab" is too short to mask in free text
    line = f"server_args={{'api_key': '{KEY}', 'host': 'abc'}}"
    assert r.redact(line) == "server_args={'api_key': '***', 'host': 'abc'}"
    assert r.redact_bytes(line.encode()) == r.redact(line).encode()
    assert not Redactor([]) and Redactor([]).redact(line) == line


def test_stream_redaction_catches_a_secret_split_across_chunks():
    text = f"[ts] api_key={KEY} and again {KEY}\n".encode() * 3
    for cut in range(1, len(text)):
        r = Redactor([KEY])
        out = r.feed(text[:cut]) + r.feed(text[cut:]) + r.flush()
        assert out == text.replace(KEY.encode(), b"***"), cut


def test_stream_redaction_holds_back_only_a_possible_secret_prefix():
    r = Redactor([KEY])
    assert r.feed(b"line one\n") == b"line one\n"
    assert r.feed(b"partial sk-li") == b"partial "
    assert r.feed(b"ne two\n") == b"sk-line two\n"
