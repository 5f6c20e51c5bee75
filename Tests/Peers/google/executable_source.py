#!/usr/bin/env python3
"""A credential_source.executable for tests: prints an executable-sourced credential response (Google's format,
version 1) for Workload Identity Federation, or fails in the way it is told to.

    "credential_source": {"executable": {"command": "/abs/path/executable_source.py --token T [options]",
                                         "timeout_millis": 5000, "output_file": "/abs/path/cache.json"}}

Options
  --token T            the subject token (id_token, or saml_response with --token-type ...:saml2)
  --token-type TYPE    urn:ietf:params:oauth:token-type:jwt (default) | ...:id_token | ...:saml2
  --expires-in S       expiration_time = now + S (default 3600; negative: already expired)
  --no-expiry          leave expiration_time out (allowed on stdout; a cached output file then counts as expired)
  --mode MODE          ok (default) | fail (success false, code "401", message "Caller not authorized.")
                       | garbage (prints text that is not JSON) | exit (prints an error, exits 1)
                       | sleep (sleeps --sleep seconds, then answers ok) | version2 (version 2, unsupported)
                       | no-token-type (success true without token_type) | empty (prints nothing)
  --sleep S            seconds to sleep in mode sleep (default 30)
  --write-output-file  also write the response to $GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE (the cache the
                       executable owns; Google's libraries only read it)
  --record FILE        append one JSON line per run: {"argv", "env": {GOOGLE_EXTERNAL_ACCOUNT_* variables}}

Google's libraries run it with GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE, GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE,
GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE ("0"), GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL (with impersonation),
GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE (with output_file) and GOOGLE_EXTERNAL_ACCOUNT_ID set, and only when
GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1.
"""

import argparse
import json
import os
import sys
import time

JWT = "urn:ietf:params:oauth:token-type:jwt"
SAML = "urn:ietf:params:oauth:token-type:saml2"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--token", default="executable-token")
    p.add_argument("--token-type", default=JWT)
    p.add_argument("--expires-in", type=int, default=3600)
    p.add_argument("--no-expiry", action="store_true")
    p.add_argument("--mode", default="ok", choices=["ok", "fail", "garbage", "exit", "sleep", "version2",
                                                     "no-token-type", "empty"])
    p.add_argument("--sleep", type=float, default=30.0)
    p.add_argument("--write-output-file", action="store_true")
    p.add_argument("--record")
    args = p.parse_args()

    if args.record:
        env = {k: v for k, v in os.environ.items() if k.startswith("GOOGLE_EXTERNAL_ACCOUNT_")}
        with open(args.record, "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "env": env, "t": time.time()}) + "\n")

    if args.mode == "sleep":
        time.sleep(args.sleep)
    if args.mode == "garbage":
        sys.stdout.write("this is not JSON\n")
        return 0
    if args.mode == "exit":
        sys.stdout.write("could not reach the identity provider\n")
        return 1
    if args.mode == "empty":
        return 0
    if args.mode == "fail":
        response = {"version": 1, "success": False, "code": "401", "message": "Caller not authorized."}
    else:
        response = {"version": 2 if args.mode == "version2" else 1, "success": True}
        if args.mode != "no-token-type":
            response["token_type"] = args.token_type
        response["saml_response" if args.token_type == SAML else "id_token"] = args.token
        if not args.no_expiry:
            response["expiration_time"] = int(time.time()) + args.expires_in
    text = json.dumps(response)
    if args.write_output_file:
        path = os.environ.get("GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE")
        if path:
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
