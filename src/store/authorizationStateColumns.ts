/** The columns of view `authorization_states` a reader gets, named as the store returns them. */
export const AUTHORIZATION_STATE_COLUMNS = `state, status, block_number AS "blockNumber", tx_hash AS "txHash",
  captured_from AS "capturedFrom", captured_to AS "capturedTo", captured_value AS "capturedValue"`;
