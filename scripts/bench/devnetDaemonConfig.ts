import type { Devnet } from "../../src/devnet/startDevnet.js";

/** The config sections of a daemon that follows `devnet` as a user's would: its chain, its endpoints (pre-confirmations over its WebSocket), its token. */
export function followDevnet(devnet: Devnet) {
  return {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], ws: devnet.wsUrl, preconfWs: devnet.wsUrl },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
  };
}
