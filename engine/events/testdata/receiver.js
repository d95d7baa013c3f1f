// A svcflow webhook receiver in Node.js, standard library only.
// Run: SVC_WEBHOOK_SECRET=... PORT=8000 node receiver.js
const crypto = require('node:crypto');
const http = require('node:http');

const TOLERANCE = 300; // seconds: refuse deliveries signed more than 5 minutes from now

// Check X-Svc-Signature-Timestamped over the raw body and X-Svc-Timestamp.
function verify(secret, timestamp, signature, body) {
  if (typeof timestamp !== 'string' || !/^[0-9]+$/.test(timestamp)) return false;
  if (typeof signature !== 'string') return false;
  const expected = Buffer.from('sha256=' + crypto.createHmac('sha256', secret)
    .update(timestamp + '.').update(body).digest('hex'));
  const got = Buffer.from(signature);
  if (got.length !== expected.length || !crypto.timingSafeEqual(got, expected)) return false;
  return Math.abs(Date.now() / 1000 - Number(timestamp)) <= TOLERANCE;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks); // raw bytes
    const ok = verify(process.env.SVC_WEBHOOK_SECRET,
      req.headers['x-svc-timestamp'], req.headers['x-svc-signature-timestamped'], body);
    if (!ok) {
      res.writeHead(401).end();
      return;
    }
    const delivery = JSON.parse(body);
    // A retry repeats delivery_id: handle each one once.
    console.log(delivery.delivery_id, delivery.event);
    res.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT || 8000), '127.0.0.1', () => {
  console.log('listening on', server.address().port);
});
