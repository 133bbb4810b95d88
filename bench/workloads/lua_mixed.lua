-- A fixed, deterministic Lua workload for the optimizer loop (scripts/bench-bolt-loop.sh).
-- It mixes what interpreters spend their time on: calls and returns, table reads and writes,
-- string building, metamethods, closures and floating point, so that the interpreter's
-- dispatch loop and many of its library functions are hot, not one tight loop.
-- Usage: lua lua_mixed.lua SCALE [SIZE]
--   SCALE: rounds (1 is a few milliseconds); SIZE: the parts' input sizes (default 1; a
--   single-stepped exact trace uses a fraction, e.g. 0.2, with the same mix of work)

local scale = tonumber(arg and arg[1]) or 1
local size = tonumber(arg and arg[2]) or 1
local function n(x) return math.max(1, math.floor(x * size)) end

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function tables(n)
  local t = {}
  for i = 1, n do t[i] = (i * 7919) % n end
  table.sort(t)
  local sum = 0
  for _, v in ipairs(t) do sum = sum + v end
  local m = {}
  for i = 1, n do m["k" .. (i % 97)] = (m["k" .. (i % 97)] or 0) + i end
  for _, v in pairs(m) do sum = sum + v end
  return sum
end

local function strings(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = string.format("%d:%x;", i, i * 31) end
  local s = table.concat(parts)
  local count = 0
  for _ in s:gmatch("%d+:") do count = count + 1 end
  s = s:gsub("[aeiou]", "_"):upper()
  return count + #s
end

local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({ x = a.x + b.x, y = a.y + b.y }, Vec) end
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end

local function objects(n)
  local acc = Vec.new(0, 0)
  local d = 0.0
  for i = 1, n do
    local v = Vec.new(i * 0.5, -i * 0.25)
    acc = acc + v
    d = d + acc:dot(v) * 1e-9
  end
  return d
end

local function closures(n)
  local function counter()
    local c = 0
    return function(k) c = c + k; return c end
  end
  local total = 0
  for i = 1, n do
    local f = counter()
    for k = 1, 8 do total = total + f(k) end
    if i % 3 == 0 then total = total - f(1) end
  end
  return total
end

local function nbody(n)
  local x, y, vx, vy = 1.0, 0.0, 0.0, 0.5
  for _ = 1, n do
    local r2 = x * x + y * y
    local r3 = r2 * math.sqrt(r2)
    vx = vx - x / r3 * 0.01
    vy = vy - y / r3 * 0.01
    x = x + vx * 0.01
    y = y + vy * 0.01
  end
  return x + y
end

local check = 0
for _ = 1, scale do
  check = check + fib(18)
  check = check + tables(n(3000))
  check = check + strings(n(1500))
  check = check + objects(n(4000))
  check = check + closures(n(1500))
  check = check + nbody(n(8000))
end
print(string.format("lua_mixed scale %d size %g check %.6f", scale, size, check))
