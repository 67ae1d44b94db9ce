'use strict';
// Shared bootstrap of both servers. A Node process runs JavaScript on one thread, so with several cores the cluster
// primary forks one worker process per core and every worker serves the whole contract. With one core the process
// serves by itself: a primary that accepts every connection and hands it to a worker on the same core cost more than
// half of the connection-per-request rate (ab, no keep-alive: 3,469 req/s against 7,195 for TechEmpower's nodejs,
// which forks only when there is more than one CPU).

const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');

const host = process.env.HOST || '127.0.0.1';
// Cleartext HTTP/2 (prior knowledge) on a port of its own, only when the harness sets H2C_PORT (CONTRACT.md).
const h2cPort = Number.parseInt(process.env.H2C_PORT, 10) || null;

// os.availableParallelism() honours the CPU affinity the harness pins us to; os.cpus() lists every core of the host.
function workerCount() {
  const cores = Number.parseInt(process.env.SERVER_CORES, 10);
  return cores > 0 ? cores : os.availableParallelism();
}

/**
 * Runs `handler` (a `(req, res)` request listener, e.g. an Express app) on every worker. `createH2cServer`, when given,
 * makes a worker's cleartext HTTP/2 server (not yet listening): with H2C_PORT set, every worker also listens with it.
 */
function runCluster({ name, defaultPort, handler, createH2cServer }) {
  const port = Number.parseInt(process.env.PORT, 10) || defaultPort;
  const h2c = createH2cServer && h2cPort ? { port: h2cPort, createServer: createH2cServer } : null;
  const listening = `listening on http://${host}:${port}` + (h2c ? `, h2c on http://${host}:${h2c.port}` : '');
  if (cluster.isPrimary && workerCount() === 1) {
    runWorker(name, port, handler, h2c);
    console.log(`${name}: node ${process.version}, one process (one core), ${listening}`);
  } else if (cluster.isPrimary) {
    runPrimary(name, listening);
  } else {
    runWorker(name, port, handler, h2c);
  }
}

// The primary only accepts connections and hands them to the workers (Node's default round-robin scheduling on Linux).
function runPrimary(name, listening) {
  const workers = workerCount();
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.once('listening', () => {
    console.log(`${name}: node ${process.version}, ${workers} workers, ${listening}`);
  });

  let stopping = false;
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), 5000).unref(); // in case a worker hangs
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  // No restarts: a dying worker is a bug the logs must show, not something to paper over in a benchmark.
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) console.error(`${name}: worker ${worker.process.pid} died (${signal || `exit code ${code}`})`);
    if (Object.keys(cluster.workers).length === 0) process.exit(stopping ? 0 : 1);
  });
}

function runWorker(name, port, handler, h2c) {
  const server = http.createServer(handler);
  // Node's default of 5 s drops keep-alive connections that sit idle briefly (say, behind a slow /fibonacci);
  // 65 s, like the nginx config.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000; // must exceed keepAliveTimeout
  server.on('clientError', respondToClientError(name));
  // Node's default backlog is 511; `ab -c 1000` opens its connections all at once. Same value as the nginx config.
  server.listen({ host, port, backlog: 4096 });
  if (h2c) {
    // Through the cluster primary like the HTTP/1.1 listener. No idle timeout to set: an HTTP/2 server has none by
    // default. A client that does not open with the HTTP/2 preface gets a GOAWAY and the connection is closed.
    h2c.createServer().listen({ host, port: h2c.port, backlog: 4096 });
  }
  process.on('SIGTERM', () => process.exit(0));
}

// Node answers an unparsable request itself, but with a bare status line: this does the same
// (same statuses, same care not to corrupt a response already under way) plus the Date and
// Server headers that the contract wants on every response.
const clientErrorStatus = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

function respondToClientError(name) {
  return (err, socket) => {
    // The same check Node's default handler makes (_httpMessage is the response being written, if any).
    const responseUnderWay = socket._httpMessage && socket._httpMessage.headersSent;
    if (err.code !== 'ECONNRESET' && socket.writable && !responseUnderWay) {
      const status = clientErrorStatus[err.code] || '400 Bad Request';
      socket.write(`HTTP/1.1 ${status}\r\nServer: ${name}\r\nDate: ${new Date().toUTCString()}\r\n` +
        'Content-Length: 0\r\nConnection: close\r\n\r\n');
    }
    socket.destroy(err);
  };
}

module.exports = { runCluster };
