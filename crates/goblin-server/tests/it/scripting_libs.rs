//! The libraries scripts rely on (cjson, cmsgpack, bit, struct, the string
//! library's patterns) answer as Redis's bundled versions do: each script
//! below was run against Redis 7.0.15, and its reply is compared byte for
//! byte.

use crate::common::{resp, TestServer};

/// (script, Redis 7.0.15's reply to `EVAL script 0`).
const CASES: &[(&[u8], &[u8])] = &[
    // The string library's pattern functions (Goblin runs its own build of
    // Lua's matcher, c/lpattern.c): replies, error texts and the position
    // they name, the gfind alias, a pattern deep enough for a stack segment.
    (
        b"return string.find('a', '%')",
        b"-ERR user_script:1: malformed pattern (ends with '%') script: 8f518f744e09ba576f84153be113127f6c82d998, on @user_script:1.\x0d\x0a",
    ),
    (
        b"return {pcall(string.find, 'a', '%')}",
        b"*2\x0d\x0a$-1\x0d\x0a$33\x0d\x0amalformed pattern (ends with '%')\x0d\x0a",
    ),
    (
        b"return string.gsub('abc', '(b)', '%2')",
        b"-ERR user_script:1: invalid capture index script: 24016ec2e06b31fa28df5f9591bd7b99be70bf29, on @user_script:1.\x0d\x0a",
    ),
    (
        b"for w in string.gmatch('x', '[a') do end",
        b"-ERR user_script:1: malformed pattern (missing ']') script: 586be56e617405bd94f5760d0548f97c2b834fcf, on @user_script:1.\x0d\x0a",
    ),
    (
        b"return {string.find('hello world', 'o w'), string.match('key:123', '(%a+):(%d+)')}",
        b"*3\x0d\x0a:5\x0d\x0a$3\x0d\x0akey\x0d\x0a$3\x0d\x0a123\x0d\x0a",
    ),
    (
        b"return tostring(string.gfind == string.gmatch)",
        b"$4\x0d\x0atrue\x0d\x0a",
    ),
    (
        b"return string.find('x', string.rep('(', 100000))",
        b"-ERR user_script:1: too many captures script: 6699fcd351cab8b3c69beb03992766a8fb93c053, on @user_script:1.\x0d\x0a",
    ),
    (
        b"local t = {} for a, b in string.gmatch('k1=v1, k2=v2', '(%w+)=(%w+)') do t[#t+1] = a .. b end return t",
        b"*2\x0d\x0a$4\x0d\x0ak1v1\x0d\x0a$4\x0d\x0ak2v2\x0d\x0a",
    ),
    (
        b"return {string.gsub('hello world', '(%w+)', {hello='HI'})}",
        b"*2\x0d\x0a$8\x0d\x0aHI world\x0d\x0a:2\x0d\x0a",
    ),
    (
        b"return string.gsub('abc', '%w', {a=true})",
        b"-ERR user_script:1: invalid replacement value (a boolean) script: 66daf9d0950d2226024b7f0b3159fd2d4a547c08, on @user_script:1.\x0d\x0a",
    ),
    (
        b"return {string.gsub('abc', '%w', function(c) return c:upper() .. '.' end, 2)}",
        b"*2\x0d\x0a$5\x0d\x0aA.B.c\x0d\x0a:2\x0d\x0a",
    ),
    (
        b"return {string.find('a.b', '.', 1, true), string.find('abc', 'b', -1), string.match('  x', '()x')}",
        b"*1\x0d\x0a:2\x0d\x0a",
    ),
    (
        b"return cjson.encode({1,2,3,'a',{b='c'}})",
        b"$21\x0d\x0a[1,2,3,\"a\",{\"b\":\"c\"}]\x0d\x0a",
    ),
    (
        b"return cjson.encode({a={1,2},b=true,c=false,d=cjson.null})",
        b"$39\x0d\x0a{\"a\":[1,2],\"d\":null,\"c\":false,\"b\":true}\x0d\x0a",
    ),
    (
        b"return cjson.encode('he said \"hi\"/\\\\ \\n\\t\\1\\127')",
        b"$37\x0d\x0a\"he said \\\"hi\\\"\\/\\\\ \\n\\t\\u0001\\u007f\"\x0d\x0a",
    ),
    (
        b"return cjson.encode({[1]=1,[2]=2,[4]=4})",
        b"$12\x0d\x0a[1,2,null,4]\x0d\x0a",
    ),
    (
        b"return cjson.encode({[1]=1,[20]=2})",
        b"-ERR user_script:1: Cannot serialise table: excessively sparse array script: 17303987ac6a57263cac31c74212431dce49e99c, on @user_script:1.\x0d\x0a",
    ),
    (
        b"return cjson.encode(3.14159265358979)",
        b"$15\x0d\x0a3.1415926535898\x0d\x0a",
    ),
    (
        b"return cjson.encode(1e300)",
        b"$6\x0d\x0a1e+300\x0d\x0a",
    ),
    (
        b"return cjson.encode(-0.1)",
        b"$4\x0d\x0a-0.1\x0d\x0a",
    ),
    (
        b"return cjson.encode({})",
        b"$2\x0d\x0a{}\x0d\x0a",
    ),
    (
        b"return cjson.encode({[1.5]=1})",
        b"$9\x0d\x0a{\"1.5\":1}\x0d\x0a",
    ),
    (
        b"return cjson.encode(123456789012345678)",
        b"$19\x0d\x0a1.2345678901235e+17\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.encode, function() end)}",
        b"*2\x0d\x0a$-1\x0d\x0a$45\x0d\x0aCannot serialise function: type not supported\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.encode, {[true]=1})}",
        b"*2\x0d\x0a$-1\x0d\x0a$62\x0d\x0aCannot serialise boolean: table key must be a number or string\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.encode, 0/0)}",
        b"*2\x0d\x0a$-1\x0d\x0a$47\x0d\x0aCannot serialise number: must not be NaN or Inf\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.decode, '{\"a\":')}",
        b"*2\x0d\x0a$-1\x0d\x0a$45\x0d\x0aExpected value but found T_END at character 6\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.decode, '[1,2')}",
        b"*2\x0d\x0a$-1\x0d\x0a$58\x0d\x0aExpected comma or array end but found T_END at character 5\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.decode, 'nul')}",
        b"*2\x0d\x0a$-1\x0d\x0a$53\x0d\x0aExpected value but found invalid token at character 1\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.decode, '\"\\\\u12\"')}",
        b"*2\x0d\x0a$-1\x0d\x0a$67\x0d\x0aExpected value but found invalid unicode escape code at character 2\x0d\x0a",
    ),
    (
        b"return cjson.encode(cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"\\\\u00e9\\\\ud83d\\\\ude00\"}'))",
        b"$35\x0d\x0a{\"a\":[1,2,{\"b\":null}],\"c\":\"\xc3\xa9\xf0\x9f\x98\x80\"}\x0d\x0a",
    ),
    (
        b"return cjson.decode('\"\\\\u00e9\"')",
        b"$2\x0d\x0a\xc3\xa9\x0d\x0a",
    ),
    (
        b"return tostring(cjson.decode('1e2'))",
        b"$3\x0d\x0a100\x0d\x0a",
    ),
    (
        b"return tostring(cjson.decode('0x10'))",
        b"$2\x0d\x0a16\x0d\x0a",
    ),
    (
        b"return tostring(cjson.decode('-Infinity'))",
        b"$4\x0d\x0a-inf\x0d\x0a",
    ),
    (
        b"return tostring(cjson.decode('[1,2,3]')[3])",
        b"$1\x0d\x0a3\x0d\x0a",
    ),
    (
        b"return type(cjson.decode('null'))",
        b"$8\x0d\x0auserdata\x0d\x0a",
    ),
    (
        b"return tostring(cjson.decode('null') == cjson.null)",
        b"$4\x0d\x0atrue\x0d\x0a",
    ),
    (
        b"return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision(), tostring(cjson.encode_keep_buffer()), tostring(cjson.encode_invalid_numbers()), tostring(cjson.decode_invalid_numbers())}",
        b"*6\x0d\x0a:1000\x0d\x0a:1000\x0d\x0a:14\x0d\x0a$4\x0d\x0atrue\x0d\x0a$5\x0d\x0afalse\x0d\x0a$4\x0d\x0atrue\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.encode_number_precision, 20)}",
        b"*2\x0d\x0a$-1\x0d\x0a$58\x0d\x0abad argument #1 to '?' (expected integer between 1 and 14)\x0d\x0a",
    ),
    (
        b"return {pcall(cjson.encode_keep_buffer, 'maybe')}",
        b"*2\x0d\x0a$-1\x0d\x0a$47\x0d\x0abad argument #1 to '?' (invalid option 'maybe')\x0d\x0a",
    ),
    (
        b"return {cjson.encode_sparse_array()}",
        b"*3\x0d\x0a$-1\x0d\x0a:2\x0d\x0a:10\x0d\x0a",
    ),
    (
        b"return cjson._NAME .. ' ' .. cjson._VERSION",
        b"$11\x0d\x0acjson 2.1.0\x0d\x0a",
    ),
    (
        b"local c = cjson.new() c.encode_number_precision(3) return {c.encode(3.14159), cjson.encode(3.14159)}",
        b"*2\x0d\x0a$4\x0d\x0a3.14\x0d\x0a$7\x0d\x0a3.14159\x0d\x0a",
    ),
    (
        b"return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769, 4294967295, 4294967296, -2147483648, -2147483649)",
        b"$62\x0d\x0a\x01\xff\x7f\xcc\x80\xcc\xff\xcd\x01\x00\xcd\xff\xff\xce\x00\x01\x00\x00\xe0\xd0\xdf\xd0\x80\xd1\xff\x7f\xd1\x80\x00\xd2\xff\xff\x7f\xff\xce\xff\xff\xff\xff\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xd2\x80\x00\x00\x00\xd3\xff\xff\xff\xff\x7f\xff\xff\xff\x0d\x0a",
    ),
    (
        b"return cmsgpack.pack(0.5, 0.1, 1e300, -1.5)",
        b"$28\x0d\x0a\xca?\x00\x00\x00\xcb?\xb9\x99\x99\x99\x99\x99\x9a\xcb~7\xe4<\x88\x00u\x9c\xca\xbf\xc0\x00\x00\x0d\x0a",
    ),
    (
        b"return cmsgpack.pack('', 'abc', string.rep('x', 40), string.rep('y', 300))",
        b"$350\x0d\x0a\xa0\xa3abc\xd9(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\xda\x01,yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\x0d\x0a",
    ),
    (
        b"return cmsgpack.pack({1,2,3}, {a=1}, {}, true, false, nil)",
        b"$12\x0d\x0a\x93\x01\x02\x03\x81\xa1a\x01\x90\xc3\xc2\xc0\x0d\x0a",
    ),
    (
        b"return cmsgpack.pack({[1]=1,[3]=3})",
        b"$5\x0d\x0a\x82\x01\x01\x03\x03\x0d\x0a",
    ),
    (
        b"return cjson.encode({cmsgpack.unpack(cmsgpack.pack({1,{a=2},'x',true}))})",
        b"$22\x0d\x0a[[1,{\"a\":2},\"x\",true]]\x0d\x0a",
    ),
    (
        b"return {cmsgpack.unpack_one(cmsgpack.pack(1,2,3))}",
        b"*2\x0d\x0a:1\x0d\x0a:1\x0d\x0a",
    ),
    (
        b"return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 2)}",
        b"*3\x0d\x0a:2\x0d\x0a:1\x0d\x0a:2\x0d\x0a",
    ),
    (
        b"return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 2, 2)}",
        b"*2\x0d\x0a:-1\x0d\x0a:3\x0d\x0a",
    ),
    (
        b"return {pcall(cmsgpack.unpack, '\\145')}",
        b"*2\x0d\x0a$-1\x0d\x0a$23\x0d\x0aMissing bytes in input.\x0d\x0a",
    ),
    (
        b"return {pcall(cmsgpack.unpack, '\\193')}",
        b"*2\x0d\x0a$-1\x0d\x0a$25\x0d\x0aBad data format in input.\x0d\x0a",
    ),
    (
        b"return tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255'))",
        b"$2\x0d\x0a-1\x0d\x0a",
    ),
    (
        b"return tostring(cmsgpack.unpack('\\211\\128\\0\\0\\0\\0\\0\\0\\0'))",
        b"$20\x0d\x0a-9.2233720368548e+18\x0d\x0a",
    ),
    (
        b"return {pcall(cmsgpack.pack)}",
        b"*2\x0d\x0a$-1\x0d\x0a$54\x0d\x0abad argument #0 to '?' (MessagePack pack needs input.)\x0d\x0a",
    ),
    (
        b"return {bit.tobit(0xffffffff), bit.tobit(2^32+5), bit.bnot(0), bit.band(0xff, 0x0f), bit.bor(1,2,4), bit.bxor(5,3)}",
        b"*6\x0d\x0a:-1\x0d\x0a:5\x0d\x0a:-1\x0d\x0a:15\x0d\x0a:7\x0d\x0a:6\x0d\x0a",
    ),
    (
        b"return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.bswap(0x12345678)}",
        b"*6\x0d\x0a:-2147483648\x0d\x0a:15\x0d\x0a:-16\x0d\x0a:878082066\x0d\x0a:2014458966\x0d\x0a:2018915346\x0d\x0a",
    ),
    (
        b"return {bit.tohex(255), bit.tohex(-1), bit.tohex(255, 4), bit.tohex(255, -4), bit.tohex(0x12345678, 2)}",
        b"*5\x0d\x0a$8\x0d\x0a000000ff\x0d\x0a$8\x0d\x0affffffff\x0d\x0a$4\x0d\x0a00ff\x0d\x0a$4\x0d\x0a00FF\x0d\x0a$2\x0d\x0a78\x0d\x0a",
    ),
    (
        b"return {pcall(bit.band, 'x')}",
        b"*2\x0d\x0a$-1\x0d\x0a$52\x0d\x0abad argument #1 to '?' (number expected, got string)\x0d\x0a",
    ),
    (
        b"return tostring(bit.tobit(1.5)) .. ' ' .. tostring(bit.tobit(2.5)) .. ' ' .. tostring(bit.tobit(-1.5))",
        b"$6\x0d\x0a2 2 -2\x0d\x0a",
    ),
    (
        b"return struct.pack('>i4', 1) .. struct.pack('<H', 258) .. struct.pack('b', -1)",
        b"$7\x0d\x0a\x00\x00\x00\x01\x02\x01\xff\x0d\x0a",
    ),
    (
        b"return {struct.unpack('>i4', '\\0\\0\\1\\0')}",
        b"*2\x0d\x0a:256\x0d\x0a:5\x0d\x0a",
    ),
    (
        b"return {struct.unpack('<h', '\\255\\255')}",
        b"*2\x0d\x0a:-1\x0d\x0a:3\x0d\x0a",
    ),
    (
        b"return {struct.size('i4'), struct.size('!4 b i4'), struct.size('d'), struct.size('>l')}",
        b"*4\x0d\x0a:4\x0d\x0a:8\x0d\x0a:8\x0d\x0a:8\x0d\x0a",
    ),
    (
        b"return struct.pack('s', 'abc') .. struct.pack('c3', 'xyzw') .. struct.pack('c0', 'hello')",
        b"$12\x0d\x0aabc\x00xyzhello\x0d\x0a",
    ),
    (
        b"return {struct.unpack('s', 'abc\\0def')}",
        b"*2\x0d\x0a$3\x0d\x0aabc\x0d\x0a:5\x0d\x0a",
    ),
    (
        b"return {struct.unpack('bc0', '\\3abcdef')}",
        b"*2\x0d\x0a$3\x0d\x0aabc\x0d\x0a:5\x0d\x0a",
    ),
    (
        b"return {pcall(struct.pack, 'q', 1)}",
        b"*2\x0d\x0a$-1\x0d\x0a$50\x0d\x0abad argument #1 to '?' (invalid format option 'q')\x0d\x0a",
    ),
    (
        b"return {pcall(struct.unpack, 'i4', 'ab')}",
        b"*2\x0d\x0a$-1\x0d\x0a$46\x0d\x0abad argument #2 to '?' (data string too short)\x0d\x0a",
    ),
    (
        b"return {pcall(struct.size, 's')}",
        b"*2\x0d\x0a$-1\x0d\x0a$53\x0d\x0abad argument #1 to '?' (option 's' has no fixed size)\x0d\x0a",
    ),
    (
        b"return {pcall(struct.pack, 'i40', 1)}",
        b"*2\x0d\x0a$-1\x0d\x0a$43\x0d\x0aintegral size 40 is larger than limit of 32\x0d\x0a",
    ),
    (
        b"return {struct.unpack('>d', struct.pack('>d', 0.1))}",
        b"*2\x0d\x0a:0\x0d\x0a:9\x0d\x0a",
    ),
    (
        b"return {struct.unpack('<f', struct.pack('<f', 0.5))}",
        b"*2\x0d\x0a:0\x0d\x0a:5\x0d\x0a",
    ),
    (
        b"return {struct.unpack('!4 b i4', struct.pack('!4 b i4', 7, 9))}",
        b"*3\x0d\x0a:7\x0d\x0a:9\x0d\x0a:9\x0d\x0a",
    ),
];

#[test]
fn bundled_libraries_answer_like_redis() {
    let s = TestServer::start();
    let mut c = s.raw();
    for (script, expected) in CASES {
        c.roundtrip(&resp(&[b"EVAL", script, b"0"]), expected);
    }
}
