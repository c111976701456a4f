function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let t = Date.now(); let s = 0;
while (Date.now() - t < 1500) { s += fib(25); }
console.log(s > 0);
