"""JSON texts and what ``JSON.stringify(JSON.parse(text))`` gives for them in JavaScript.

Shared by the pure-Python test and the Node test, which checks every expectation here
against Node.js itself, so none of them is a belief about JavaScript.
"""

from __future__ import annotations

CASES: list[tuple[str, str]] = [
    # layout and literals
    ('{ "a" : 1 , "b" : [ true, false, null ] }', '{"a":1,"b":[true,false,null]}'),
    ("[]", "[]"),
    ("{}", "{}"),
    ('{"a":{},"b":[[],{}]}', '{"a":{},"b":[[],{}]}'),
    # numbers: JavaScript's layout of the shortest round-trip digits
    ("[1.0, 100, -0, -0.0, 0.0]", "[1,100,0,0,0]"),
    ("[0.1, 0.5, 1.5e-7, 1e-6, 1e-7, 0.000001234]", "[0.1,0.5,1.5e-7,0.000001,1e-7,0.000001234]"),
    (
        "[1e20, 1e21, 123e19, 1.5e300, 1E400, -1E400]",
        "[100000000000000000000,1e+21,1.23e+21,1.5e+300,null,null]",
    ),
    (
        "[12345678901234567890, 9007199254740993, -9007199254740993]",
        "[12345678901234567000,9007199254740992,-9007199254740992]",
    ),
    (
        "[123.456e5, 5e-324, 1.7976931348623157e308, 2.5e-5]",
        "[12345600,5e-324,1.7976931348623157e+308,0.000025]",
    ),
    ("[0.1e1, 100e-2, 4.35, 1.005, 3.0e0]", "[1,1,4.35,1.005,3]"),
    (
        "[1e1000000, 4.9406564584124654e-324, 2.2250738585072014e-308]",
        "[null,5e-324,2.2250738585072014e-308]",
    ),
    # strings: what is escaped and what is kept
    ('"plain"', '"plain"'),
    ('"q\\"b\\\\s\\/"', '"q\\"b\\\\s/"'),
    ('"\\b\\f\\n\\r\\t\\u0000\\u001f\\u007f"', '"\\b\\f\\n\\r\\t\\u0000\\u001f\u007f"'),
    ('"\\u2028\\u2029"', '"\u2028\u2029"'),
    ('"zoë 例え 😀 \\ud83d\\ude00"', '"zoë 例え 😀 😀"'),
    ('"lone \\ud800 and \\udfff"', '"lone \\ud800 and \\udfff"'),
    ('"\\u00e9\\u00E9"', '"éé"'),
    # key order: array-index keys first, ascending; the rest as inserted; duplicates keep
    # their first position and their last value
    ('{"b":1,"a":2}', '{"b":1,"a":2}'),
    (
        '{"b":1,"10":2,"2":3,"01":4,"-1":5,"4294967294":6,"4294967295":7,"0":8,"1.5":9}',
        '{"0":8,"2":3,"10":2,"4294967294":6,"b":1,"01":4,"-1":5,"4294967295":7,"1.5":9}',
    ),
    ('{"a":1,"b":2,"a":3}', '{"a":3,"b":2}'),
    ('{"x":{"9":0,"y":1,"1":2}}', '{"x":{"1":2,"9":0,"y":1}}'),
    ('{"\\u00e9":1,"é":2}', '{"é":2}'),
]
