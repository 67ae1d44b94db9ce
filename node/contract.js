'use strict';
// The parts of the contract (../CONTRACT.md) that do not depend on the framework: both servers share them.

const http = require('node:http');

const FACTORIAL_MAX = 5000;
const FIBONACCI_MAX = 45;

/** The integer in `value` if it lies in 0..max, else null (missing, not an integer, out of range). */
function parseParam(value, max) {
  if (typeof value !== 'string' || !/^[0-9]{1,9}$/.test(value)) return null;
  const n = Number(value);
  return n <= max ? n : null;
}

function paramError(max) {
  return `param must be an integer from 0 to ${max}\n`;
}

function factorial(n) {
  const last = BigInt(n);
  let product = 1n;
  for (let i = 2n; i <= last; i++) product *= i;
  return product;
}

// Naive double recursion on purpose: this is the CPU-bound test. fib(0) = fib(1) = 1.
function fibonacci(n) {
  return n < 2 ? 1 : fibonacci(n - 1) + fibonacci(n - 2);
}

// Each cluster worker is its own process, so each has its own counter.
let nextTweetId = 1000000;

function tweets() {
  return [{ id: nextTweetId++, author: 'author1', content: 'Hello, World!' }];
}

// The weather upstream, fetched through a pool of keep-alive connections per worker. Core http
// rather than undici's Pool (the engine behind Node's fetch): undici is not importable from core,
// it would be a second dependency, and core http is what a Node service uses without one.
// fetch() itself is slower than both (WHATWG streams around every body).
const upstream = new URL(process.env.UPSTREAM_URL || 'http://127.0.0.1:8000/weather.json');
const upstreamRequest = {
  hostname: upstream.hostname,
  port: upstream.port || 80,
  path: upstream.pathname + upstream.search,
  // Bounded, so a flood of clients waits in the agent's queue instead of opening a socket per request.
  agent: new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 }),
  timeout: 5000,
};

/** Resolves to {code, temp} from the upstream document; rejects on any upstream failure. */
function fetchWeather() {
  return new Promise((resolve, reject) => {
    const request = http.get(upstreamRequest, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`upstream answered ${response.statusCode}`));
        return;
      }
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { body += chunk; });
      response.on('error', reject);
      response.on('end', () => {
        try {
          const doc = JSON.parse(body);
          const code = doc.weather[0].id;
          const temp = Math.trunc(doc.main.temp);
          if (!Number.isInteger(code) || !Number.isInteger(temp)) throw new Error('unexpected document');
          resolve({ code, temp });
        } catch (err) {
          reject(new Error(`bad upstream document: ${err.message}`));
        }
      });
    });
    request.on('timeout', () => request.destroy(new Error('upstream timed out')));
    request.on('error', reject);
  });
}

module.exports = {
  FACTORIAL_MAX, FIBONACCI_MAX, parseParam, paramError, factorial, fibonacci, tweets, fetchWeather,
};
