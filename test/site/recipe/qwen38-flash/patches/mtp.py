# qwen38-flash MTP head patch (test-site stub: mounted read-only over vLLM's mtp.py)
