"""Escapes with allowed syntax: string getattr frame walking, format strings, ``__subclasses__`` routes.

Each attack must fail (a clear error, nothing reached) and the env must answer the next step.
"""

from __future__ import annotations

import pytest

from .conftest import answers_next_step

# every attack prints ESCAPED (built at run time, so a traceback quoting the source does not contain it)
# if it reaches what it wants; none may
FRAME_WALKS = {
    "getattr gi_frame": "g = (x for x in [1])\nprint('ESC' + 'APED', getattr(g, 'gi_frame'))",
    "getattr built name": "g = (x for x in [1])\nprint('ESC' + 'APED', getattr(g, 'gi' + '_fr' + 'ame'))",
    "reduce getattr to globals": (
        "import functools\ng = (x for x in [1])\n"
        "glb = functools.reduce(getattr, ['gi_frame', 'f_back', 'f_globals'], g)\nprint('ESC' + 'APED', glb)"
    ),
    "reduce getattr to builtins": (
        "import functools\ndef gen():\n    yield 1\ng = gen()\nnext(g)\n"
        "b = functools.reduce(getattr, ['gi_frame', 'f_builtins'], g)\nprint('ESC' + 'APED', b['open'])"
    ),
    "map getattr": "g = (x for x in [1])\nprint('ESC' + 'APED', list(map(getattr, [g], ['gi_code'])))",
    "partial getattr": (
        "import functools\ng = (x for x in [1])\nprint('ESC' + 'APED', functools.partial(getattr, g)('gi_frame'))"
    ),
    "traceback frame by string": (
        "try:\n    1 / 0\nexcept Exception as e:\n    tb = getattr(e, '__traceback__')\n    print('ESC' + 'APED', tb)"
    ),
    "tb_frame by string": (
        "try:\n    1 / 0\nexcept Exception as e:\n    print('ESC' + 'APED', getattr(getattr(e, 'with_traceback'), 'x'))"
    ),
    "function globals by string": "f = lambda: 0\nprint('ESC' + 'APED', getattr(f, '__globals__'))",
    "function code by string": (
        "f = lambda: 0\nprint('ESC' + 'APED', getattr(f, 'func_code', None) or getattr(f, '__code__'))"
    ),
    "bound method self": "print('ESC' + 'APED', getattr(print, '__self__'))",
    "hasattr probe then getattr": (
        "g = (x for x in [1])\nok = hasattr(g, 'gi_frame')\n"
        "print(('ESC' + 'APED') if ok else 'no', getattr(g, 'gi_frame'))"
    ),
    "dir then getattr everything": "g = (x for x in [1])\nprint('ESC' + 'APED', [getattr(g, n) for n in dir(g)])",
    "getattr on apis stub": "print('ESC' + 'APED', getattr(getattr(apis, 'notes'), '__init__'))",
    "from import private": "from random import _os\nprint('ESC' + 'APED', _os)",
}
FORMAT_STRINGS = {
    "str.format dunder": "print('ESC' + 'APED', '{0.__class__}'.format(1))",
    "format via getattr": "g = (x for x in [1])\nprint('ESC' + 'APED', getattr('{0.gi_frame.f_globals}', 'format')(g))",
    "format_map via getattr": (
        "g = (x for x in [1])\nprint('ESC' + 'APED', getattr('{g.gi_frame}', 'format_map')({'g': g}))"
    ),
    "unbound str.format": "print('ESC' + 'APED', str.format('{0.gi_frame}', (x for x in [1])))",
    "map over str.format": "print('ESC' + 'APED', list(map(getattr(str, 'for' + 'mat'), ['{0.gi_code}'], [len])))",
    "f-string attribute": "g = (x for x in [1])\nprint('ESC' + 'APED', f'{g.gi_frame.f_globals}')",
    "f-string getattr": "g = (x for x in [1])\nprint('ESC' + 'APED', f\"{getattr(g, 'gi_frame')}\")",
    "string.Formatter": "import string\nprint('ESC' + 'APED', string.Formatter().get_field('0.gi_frame', [1], {}))",
}
SUBCLASSES = {
    "tuple class bases": "print('ESC' + 'APED', ().__class__.__bases__[0].__subclasses__())",
    "object subclasses": "print('ESC' + 'APED', object.__subclasses__())",
    "getattr object subclasses": "print('ESC' + 'APED', getattr(object, '__subclasses__')())",
    "getattr split name": "print('ESC' + 'APED', getattr(object, '_' + '_subclasses_' + '_')())",
    "mro by string": "print('ESC' + 'APED', getattr(int, 'mro')())",
    "type subclasses": "print('ESC' + 'APED', type.__subclasses__(type))",
    "exception class walk": "print('ESC' + 'APED', getattr(getattr(Exception, '__base__'), '__subclasses__')())",
    "class body dunder": "class A:\n    __slots__ = ()\nprint('ESC' + 'APED', getattr(A, '__subclasses__'))",
    "metaclass keyword": "class A(metaclass=int):\n    pass\nprint('ESC' + 'APED')",
}

# library helpers that read or write attributes whose names the caller picks, or evaluate strings as
# code: each hands a cell what the syntax check and the string guard refuse
REFLECTION = {
    "update_wrapper updated globals": (
        "import functools\ndef w():\n    pass\n"
        "functools.update_wrapper(w, getattr, assigned=(), updated=('__globals__',))\nprint('ESC' + 'APED', os)"
    ),
    "update_wrapper module globals": (
        "import functools, random\ndef w():\n    pass\n"
        "functools.update_wrapper(w, random.seed, assigned=(), updated=('__globals__',))\n"
        "print('ESC' + 'APED', _os)"
    ),
    "wraps updated globals": (
        "import functools\n@functools.wraps(print, assigned=(), updated=('__globals__',))\ndef w():\n    pass\n"
        "print('ESC' + 'APED', os)"
    ),
    "update_wrapper assigned dunder": (
        "import functools\nclass W:\n    pass\nw = W()\n"
        "functools.update_wrapper(w, print, assigned=('__closure__',), updated=())\n"
        "print('ESC' + 'APED', dir(w))"
    ),
    "singledispatch string annotation": (
        "import functools\n@functools.singledispatch\ndef f(x):\n    return 0\n"
        "def g(x: \"print('ESC' + 'APED', ().__class__.__base__.__subclasses__())\"):\n    return 1\n"
        "f.register(g)"
    ),
    "singledispatchmethod string annotation": (
        "import functools\nclass A:\n    @functools.singledispatchmethod\n    def f(self, x):\n        return 0\n"
        "def g(self, x: \"print('ESC' + 'APED', ().__class__.__base__.__subclasses__())\"):\n    return 1\n"
        "A.f.register(g)"
    ),
    "cached_property attrname then copy reduce setattr": (
        "import functools, copy\nclass A:\n    pass\nclass T:\n    pass\nt = T()\n"
        "def red(proto):\n    return (lambda: t, (), (None, {'__class__': A}))\n"
        "cp = functools.cached_property(lambda self: red)\ncp.attrname = '__reduce_ex__'\nA.r = cp\na = A()\n"
        "a.r\ncopy.copy(a)\nprint(('ESC' + 'APED') if isinstance(t, A) else 'no')"
    ),
}


def _attack(env, code):
    obs, reward, terminated, truncated, info = env.step(code)
    assert "ESCAPED" not in obs, obs[-500:]
    assert obs.startswith("Execution failed. Traceback:"), obs[-500:]
    assert not terminated and reward == 0.0
    answers_next_step(env)


@pytest.mark.parametrize("name", sorted(FRAME_WALKS))
def test_frame_walking_by_string_getattr_fails(env, name):
    _attack(env, FRAME_WALKS[name])


@pytest.mark.parametrize("name", sorted(FORMAT_STRINGS))
def test_format_string_attribute_access_fails(env, name):
    _attack(env, FORMAT_STRINGS[name])


@pytest.mark.parametrize("name", sorted(REFLECTION))
def test_reflection_helpers_cannot_reach_attributes_by_name(env, name):
    _attack(env, REFLECTION[name])


@pytest.mark.parametrize("name", sorted(SUBCLASSES))
def test_subclasses_routes_fail(env, name):
    _attack(env, SUBCLASSES[name])


def test_allowed_getattr_still_works(env):
    """The guard refuses private and frame attributes only: ordinary ``getattr`` keeps working."""
    obs, *_ = env.step("import math\nprint(getattr(math, 'sqrt')(16), hasattr(math, 'pi'), hasattr(math, '_x'))")
    assert obs == "4.0 True False\n"
