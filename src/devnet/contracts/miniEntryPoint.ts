// Generated from MiniEntryPoint.sol by scripts/compileContracts.mjs (npm run compile:contracts). Do not edit.
// solc 0.8.30+commit.73712a01.Emscripten.clang, optimizer 200 runs, evmVersion cancun.
import type { Hex } from "viem";

export const miniEntryPointAbi = [
  {
    "inputs": [
      {
        "components": [
          {
            "internalType": "address",
            "name": "sender",
            "type": "address"
          },
          {
            "internalType": "uint256",
            "name": "nonce",
            "type": "uint256"
          },
          {
            "internalType": "bytes",
            "name": "initCode",
            "type": "bytes"
          },
          {
            "internalType": "bytes",
            "name": "callData",
            "type": "bytes"
          },
          {
            "internalType": "bytes32",
            "name": "accountGasLimits",
            "type": "bytes32"
          },
          {
            "internalType": "uint256",
            "name": "preVerificationGas",
            "type": "uint256"
          },
          {
            "internalType": "bytes32",
            "name": "gasFees",
            "type": "bytes32"
          },
          {
            "internalType": "bytes",
            "name": "paymasterAndData",
            "type": "bytes"
          },
          {
            "internalType": "bytes",
            "name": "signature",
            "type": "bytes"
          }
        ],
        "internalType": "struct MiniEntryPoint.PackedUserOperation[]",
        "name": "ops",
        "type": "tuple[]"
      },
      {
        "internalType": "address payable",
        "name": "beneficiary",
        "type": "address"
      }
    ],
    "name": "handleOps",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  }
] as const;

export const miniEntryPointBytecode: Hex = "0x6080604052348015600e575f5ffd5b506102f58061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610029575f3560e01c8063765e827f1461002d575b5f5ffd5b61004061003b36600461018f565b610042565b005b5f5b82811015610172575f84848381811061005f5761005f610211565b90506020028101906100719190610225565b61007f906020810190610244565b6001600160a01b031685858481811061009a5761009a610211565b90506020028101906100ac9190610225565b6100ba906060810190610266565b6040516100c89291906102b0565b5f604051808303815f865af19150503d805f8114610101576040519150601f19603f3d011682016040523d82523d5f602084013e610106565b606091505b50509050806101695760405162461bcd60e51b815260206004820152602560248201527f4d696e69456e747279506f696e743a2075736572206f7065726174696f6e2066604482015264185a5b195960da1b606482015260840160405180910390fd5b50600101610044565b50505050565b6001600160a01b038116811461018c575f5ffd5b50565b5f5f5f604084860312156101a1575f5ffd5b833567ffffffffffffffff8111156101b7575f5ffd5b8401601f810186136101c7575f5ffd5b803567ffffffffffffffff8111156101dd575f5ffd5b8660208260051b84010111156101f1575f5ffd5b60209182019450925084013561020681610178565b809150509250925092565b634e487b7160e01b5f52603260045260245ffd5b5f823561011e1983360301811261023a575f5ffd5b9190910192915050565b5f60208284031215610254575f5ffd5b813561025f81610178565b9392505050565b5f5f8335601e1984360301811261027b575f5ffd5b83018035915067ffffffffffffffff821115610295575f5ffd5b6020019150368190038213156102a9575f5ffd5b9250929050565b818382375f910190815291905056fea26469706673582212204aba84bdbe47648d9cd50220492970bfbf28457f8e3bab71ff9375872f22aa7764736f6c634300081e0033";
