// Generated from MiniEntryPoint.sol by scripts/compileContracts.mjs (npm run compile:contracts). Do not edit.
// solc 0.8.30+commit.73712a01.Emscripten.clang, optimizer 200 runs, evmVersion cancun.
import type { Hex } from "viem";

export const miniEntryPointAbi = [
  {
    "inputs": [
      {
        "components": [
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
            "name": "userOps",
            "type": "tuple[]"
          },
          {
            "internalType": "address",
            "name": "aggregator",
            "type": "address"
          },
          {
            "internalType": "bytes",
            "name": "signature",
            "type": "bytes"
          }
        ],
        "internalType": "struct MiniEntryPoint.UserOpsPerAggregator[]",
        "name": "opsPerAggregator",
        "type": "tuple[]"
      },
      {
        "internalType": "address payable",
        "name": "beneficiary",
        "type": "address"
      }
    ],
    "name": "handleAggregatedOps",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
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

export const miniEntryPointBytecode: Hex = "0x6080604052348015600e575f5ffd5b506103d58061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610034575f3560e01c8063765e827f14610038578063dbed18e01461004d575b5f5ffd5b61004b61004636600461024b565b610060565b005b61004b61005b36600461024b565b6100a4565b5f5b8281101561009e5761009684848381811061007f5761007f61029e565b905060200281019061009191906102b2565b610115565b600101610062565b50505050565b5f5b8281101561009e57365f8585848181106100c2576100c261029e565b90506020028101906100d491906102d1565b6100de90806102e5565b90925090505f5b8181101561010a5761010283838381811061007f5761007f61029e565b6001016100e5565b5050506001016100a6565b5f610123602083018361032b565b6001600160a01b0316610139606084018461034d565b604051610147929190610390565b5f604051808303815f865af19150503d805f8114610180576040519150601f19603f3d011682016040523d82523d5f602084013e610185565b606091505b50509050806101e85760405162461bcd60e51b815260206004820152602560248201527f4d696e69456e747279506f696e743a2075736572206f7065726174696f6e2066604482015264185a5b195960da1b606482015260840160405180910390fd5b5050565b5f5f83601f8401126101fc575f5ffd5b50813567ffffffffffffffff811115610213575f5ffd5b6020830191508360208260051b850101111561022d575f5ffd5b9250929050565b6001600160a01b0381168114610248575f5ffd5b50565b5f5f5f6040848603121561025d575f5ffd5b833567ffffffffffffffff811115610273575f5ffd5b61027f868287016101ec565b909450925050602084013561029381610234565b809150509250925092565b634e487b7160e01b5f52603260045260245ffd5b5f823561011e198336030181126102c7575f5ffd5b9190910192915050565b5f8235605e198336030181126102c7575f5ffd5b5f5f8335601e198436030181126102fa575f5ffd5b83018035915067ffffffffffffffff821115610314575f5ffd5b6020019150600581901b360382131561022d575f5ffd5b5f6020828403121561033b575f5ffd5b813561034681610234565b9392505050565b5f5f8335601e19843603018112610362575f5ffd5b83018035915067ffffffffffffffff82111561037c575f5ffd5b60200191503681900382131561022d575f5ffd5b818382375f910190815291905056fea2646970667358221220aa82206596399ebade91dabd94a73034207996822bfe246863343163048a062864736f6c634300081e0033";
