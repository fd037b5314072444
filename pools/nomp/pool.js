// Starts stratum-pool-sha256 (a maintained fork of node-stratum-pool, NOMP's pool core),
// unmodified, the way its README shows, against a bitcoind-compatible node. Everything
// site-specific comes from the JSON file named on the command line:
//   node pool.js config.json
const fs = require('fs');
const Stratum = require('stratum-pool-sha256');

const path = process.argv[2];
if (!path) throw new Error('usage: node pool.js CONFIG.json');
const c = JSON.parse(fs.readFileSync(path, 'utf8'));

const pool = Stratum.createPool({
  coin: { name: 'Bitcoin', symbol: 'BTC', algorithm: 'sha256', asicboost: false, peerMagic: 'fabfb5da' },
  address: c.payout_address,
  // How this pool learns of blocks: it polls getblocktemplate every blockRefreshInterval ms.
  blockRefreshInterval: c.block_refresh_ms,
  jobRebroadcastTimeout: c.job_rebroadcast_s,
  connectionTimeout: 600,
  emitInvalidBlockHashes: true,
  tcpProxyProtocol: false,
  banning: { enabled: false },
  ports: { [c.listen_port]: { diff: c.difficulty } },
  daemons: [{ host: c.rpc_host, port: c.rpc_port, user: c.rpc_user, password: c.rpc_password }],
  p2p: { enabled: false },
}, (ip, port, worker, password, callback) => callback({ error: null, authorized: true, disconnect: false }));

pool.on('log', (severity, text) => console.log(severity, text));
pool.start();
