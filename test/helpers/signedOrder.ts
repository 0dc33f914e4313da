import { keccak256, stringToHex, type Address, type PublicClient } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { readTokenDomain, signTransferAuthorization } from "../../src/authorization/eip3009.js";
import type { Order } from "../../src/store/orderStates.js";
import type { Store } from "../../src/store/store.js";

/**
 * Signs a transfer authorization from `buyer` to `payee` for `value` of `token`, valid for an hour
 * of chain time, with a fresh nonce (`label` and the clock), and stores it as `order add` would.
 */
export async function addSignedTransferOrder(
  store: Pick<Store, "addOrder">,
  client: PublicClient,
  chain: { chainId: number; token: Address },
  order: { buyer: PrivateKeyAccount; payee: Address; value: bigint; label: string },
): Promise<Order> {
  const { buyer, payee, value } = order;
  const domain = await readTokenDomain(client, chain.token);
  const validBefore = (await client.getBlock()).timestamp + 3600n;
  const message = {
    from: buyer.address,
    to: payee,
    value,
    validAfter: 0n,
    validBefore,
    nonce: keccak256(stringToHex(`${order.label} ${Date.now()}`)),
  };
  const { signature } = await signTransferAuthorization(buyer, domain, message);
  return store.addOrder(
    {
      chainId: chain.chainId,
      token: chain.token,
      authorizer: buyer.address,
      payee,
      value,
      validAfter: 0,
      validBefore: Number(validBefore),
      nonce: message.nonce,
      kind: "transfer",
      signature,
    },
    Date.now(),
  );
}
