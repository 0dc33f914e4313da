import { BaseError } from "./base.js";

/** An order in a state the requested transition does not start from (exit 1). */
export class OrderStateError extends BaseError {
  override name = "OrderStateError";
}

/** No order with that id, or one already stored for the same (token, authorizer, nonce) (exit 1). */
export class OrderNotFoundError extends BaseError {
  override name = "OrderNotFoundError";
}
export class OrderExistsError extends BaseError {
  override name = "OrderExistsError";
}
