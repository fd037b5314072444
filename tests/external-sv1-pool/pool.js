// Starts stratum-pool-sha256, unmodified, the way its README shows, against a
// bitcoind-compatible node. Addresses come from the environment (set by the test).
const Stratum = require('stratum-pool-sha256');

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

const pool = Stratum.createPool({
  coin: { name: 'Bitcoin', symbol: 'BTC', algorithm: 'sha256', asicboost: false, peerMagic: 'fabfb5da' },
  address: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
  blockRefreshInterval: 500,
  jobRebroadcastTimeout: 55,
  connectionTimeout: 600,
  emitInvalidBlockHashes: true,
  tcpProxyProtocol: false,
  banning: { enabled: false },
  ports: { [env('POOL_PORT')]: { diff: Number(process.env.POOL_DIFF || '0.000001') } },
  daemons: [{ host: '127.0.0.1', port: Number(env('NODE_RPC_PORT')), user: env('RPC_USER'), password: env('RPC_PASSWORD') }],
  p2p: { enabled: false },
}, (ip, port, worker, password, callback) => callback({ error: null, authorized: true, disconnect: false }));

pool.on('log', (severity, text) => console.log(severity, text));
pool.start();
