"""What only ``evolver/AppWorldApps-v0`` has to keep from agent code: the app server's process, the world's
files, the apps' auth and the routes no API exposes.

The cases every AppWorld id shares (language escapes, OS layers, forged IPC, faults, outputs,
persistence, fuzz) run against this id too, in ``tests/appworld/security`` (``conftest.FLAVOURS``).
Skipped, with the reason, where the apps are not installed (``bash scripts/setup.sh appworld-apps``).
"""

from __future__ import annotations

import os
import subprocess

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld_apps import _server, backend
from evolver_gym.appworld_apps.backend import unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"AppWorld's apps are not installed: {REASON}")

# HS256 in the sandbox's allowed modules (json only): what code that knows the package's published
# signing key needs to mint a token for anyone
FORGE = r'''
import json
K = [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
     0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
     0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
     0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
     0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
     0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
     0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
     0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]
def rotr(x, n):
    return ((x >> n) | (x << (32 - n))) & 0xffffffff
def sha256(msg):
    h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    bits = len(msg) * 8
    msg = msg + [0x80] + [0] * ((55 - len(msg)) % 64) + [(bits >> (8 * i)) & 0xff for i in range(7, -1, -1)]
    for c in range(0, len(msg), 64):
        w = [(msg[c + 4 * i] << 24) | (msg[c + 4 * i + 1] << 16) | (msg[c + 4 * i + 2] << 8) | msg[c + 4 * i + 3]
             for i in range(16)]
        for i in range(16, 64):
            s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w.append((w[i - 16] + s0 + w[i - 7] + s1) & 0xffffffff)
        a, b, cc, d, e, f, g, hh = h
        for i in range(64):
            t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) & 0xffffffff
            t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc))) & 0xffffffff
            hh, g, f, e, d, cc, b, a = g, f, e, (d + t1) & 0xffffffff, cc, b, a, (t1 + t2) & 0xffffffff
        h = [(x + y) & 0xffffffff for x, y in zip(h, [a, b, cc, d, e, f, g, hh])]
    return [(x >> (8 * i)) & 0xff for x in h for i in range(3, -1, -1)]
def hmac256(key, msg):
    key = key + [0] * (64 - len(key))
    return sha256([k ^ 0x5c for k in key] + sha256([k ^ 0x36 for k in key] + msg))
ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
def b64(data):
    bits = ''.join(format(x, '08b') for x in data)
    bits += '0' * ((6 - len(bits) % 6) % 6)
    return ''.join(ALPHABET[int(bits[i:i + 6], 2)] for i in range(0, len(bits), 6))
def forge(sub, key):
    head = b64(list(json.dumps({'alg': 'HS256', 'typ': 'JWT'}, separators=(',', ':')).encode()))
    body = b64(list(json.dumps({'sub': sub, 'exp': 4102444800}, separators=(',', ':')).encode()))
    return head + '.' + body + '.' + b64(hmac256(list(key.encode()), list((head + '.' + body).encode())))
'''


@pytest.fixture(scope="module")
def env():
    e = gym.make("evolver/AppWorldApps-v0", split="train", timeout_s=10.0, max_steps=10**6).unwrapped
    e.reset(options={"index": 0})
    yield e
    e.close()


def _answers(env):
    obs, _, term, _, info = env.step("print(apis.supervisor.show_profile()['email'])")
    assert obs.strip() == env.world["people"][0]["email"] and info["action_valid"] and not term, obs


def test_a_token_signed_with_the_packages_key_logs_nobody_in(env):
    env.reset(options={"index": 0})
    other = env.world["people"][1]["email"]
    obs, *_ = env.step(FORGE + f"tok = forge('venmo+{other}', 'SECRET')\n"
                       "print(apis.venmo.show_account(access_token=tok))")
    assert "Response status code is 401" in obs and other not in obs, obs[-500:]
    # the same code with a real login still works: the apps' own tokens are what the random key signs
    obs, *_ = env.step(
        "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
        "me = apis.supervisor.show_profile()\n"
        "tok = apis.venmo.login(username=me['email'], password=pw['venmo'])['access_token']\n"
        "print(apis.venmo.show_account(access_token=tok)['email'] == me['email'])"
    )
    assert obs == "True\n", obs[-500:]


@pytest.mark.parametrize(
    "call",
    [
        "apis.spotify.show_song(song_id='../../admin/openapi.json')",  # GET: the admin app's schema
        "apis.spotify.show_song(song_id='../../supervisor/account_passwords')",
        "apis.amazon.add_product_to_cart(product_id='../../admin/credit', access_token='x', amount=10**6)",  # POST
        "apis.amazon.add_product_to_cart(product_id='../../admin/balance?', access_token='x', card_number=1)",
        "apis.spotify.show_song(song_id='..')",
        "apis.spotify.show_song(song_id='.')",
        "apis.spotify.show_song(song_id='')",
        "apis.spotify.show_song(song_id='1/../../../admin')",
        "apis.spotify.show_song(song_id='%2e%2e/%2e%2e/admin/openapi.json')",
    ],
)
def test_a_path_parameter_never_reaches_another_route(env, call):
    obs, *_ = env.step(f"print({call})")
    assert obs.startswith("Execution failed.") and "Response status code is 4" in obs, obs[-500:]
    reply = obs.split("Exception:", 1)[1]  # after the traceback's echo of the call
    assert "openapi" not in reply and "password" not in reply, reply
    assert "card_number" not in reply and "owner_name" not in reply  # the admin routes' own validation never answers
    _answers(env)


def test_a_path_parameter_with_odd_characters_is_still_one_segment(env):
    # AppWorld's user_email path parameters: '@' and '.' reach the apps as they were written
    env.reset(options={"index": 0})
    w = env.world
    stranger = next(p["email"] for p in w["people"][1:] if p["email"] not in w["venmo_friends"])
    obs, _, _, _, info = env.step(
        "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
        "me = apis.supervisor.show_profile()\n"
        "tok = apis.venmo.login(username=me['email'], password=pw['venmo'])['access_token']\n"
        f"print(apis.venmo.add_friend(user_email={stranger!r}, access_token=tok))"
    )
    assert info["action_valid"], obs[-500:]
    assert any(d.app == "venmo" and d.added for d in env.diffs() if d.name != "venmo.notifications")


def _secret_paths() -> dict[str, str]:
    world = backend.world_dir(0)
    found = subprocess.run([backend.find_python(), "-c", "import appworld; print(appworld.__file__)"],
                           capture_output=True, text=True, timeout=120, check=True)
    appworld_dir = os.path.dirname(found.stdout.strip())
    return {
        "a database of the world": str(world / "venmo.db"),
        "the world's facts": str(world / "world.json"),
        "the world's folder": str(world),
        "the app server's source": _server.__file__,
        "the appworld package": appworld_dir,
        "the apps' code": os.path.join(appworld_dir, "apps", "venmo"),
    }


SECRETS = _secret_paths() if REASON is None else {}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_an_escaped_cell_reads_none_of_the_apps_files(env, name):
    path = SECRETS[name]
    assert os.path.exists(path), path  # the probe is real: the file is there for the host
    out = env._sandbox._execute_unguarded(
        f"import os\np = {path!r}\nprint(os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read(16))",
        env._handler,
    ).output
    assert "PermissionError" in out or "Permission denied" in out, out
    _answers(env)


@pytest.mark.parametrize("entry", ["environ", "cmdline", "fd", "mem", "status"])
def test_an_escaped_cell_cannot_reach_the_app_server_process(env, entry):
    pid = env.server._proc.pid
    out = env._sandbox._execute_unguarded(
        f"import os\np = '/proc/{pid}/{entry}'\nprint(os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read(64))",
        env._handler,
    ).output
    assert "PermissionError" in out or "Permission denied" in out, out
    out = env._sandbox._execute_unguarded(f"import os\nos.kill({pid}, 9)", env._handler).output
    assert "PermissionError" in out or "Operation not permitted" in out, out
    assert env.server._proc.poll() is None  # still running
    _answers(env)


def test_an_out_of_range_integer_is_refused_before_the_apps(env):
    calls = env.num_calls
    obs, *_ = env.step("apis.spotify.show_song(song_id=[2**64])")
    assert "Response status code is 422" in obs and "64-bit integer" in obs, obs[-500:]
    assert env.num_calls == calls  # never sent to the app server
    _answers(env)
