/** The bench's provider-shaped proxy (latency, rate limit with 429 and Retry-After, range and result caps), for tests. */
export {
  DEFAULT_PROVIDER_SHAPE,
  startProviderProxy,
  type ProviderProxy,
  type ProviderShape,
} from "../../scripts/bench/providerProxy.js";
