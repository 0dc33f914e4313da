// Generated from MiniEntryPoint.sol by scripts/compileContracts.mjs (npm run compile:contracts). Do not edit.
// solc 0.8.30+commit.73712a01.Emscripten.clang, optimizer 200 runs, evmVersion cancun.
import type { Hex } from "viem";

export const miniEntryPointAbi = [
  {
    "anonymous": false,
    "inputs": [],
    "name": "BeforeExecution",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "aggregator",
        "type": "address"
      }
    ],
    "name": "SignatureAggregatorChanged",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "bytes32",
        "name": "userOpHash",
        "type": "bytes32"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "sender",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "paymaster",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "nonce",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "bool",
        "name": "success",
        "type": "bool"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "actualGasCost",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "actualGasUsed",
        "type": "uint256"
      }
    ],
    "name": "UserOperationEvent",
    "type": "event"
  },
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

export const miniEntryPointBytecode: Hex = "0x6080604052348015600e575f5ffd5b506108a18061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610034575f3560e01c8063765e827f14610038578063dbed18e01461004d575b5f5ffd5b61004b6100463660046106a3565b610060565b005b61004b61005b3660046106a3565b61010b565b5f5b8281101561009e5761009684848381811061007f5761007f6106f6565b9050602002810190610091919061070a565b6102d4565b600101610062565b506040517fbb47ee3e183a558b1a2ff0874b079f3fc5478b7454eacf2bfc5af2ff5878f972905f90a15f5b82811015610105576100fd8484838181106100e6576100e66106f6565b90506020028101906100f8919061070a565b6103d6565b6001016100c9565b50505050565b5f5b828110156101a0575f5b848483818110610129576101296106f6565b905060200281019061013b9190610729565b610145908061073d565b90508110156101975761018f858584818110610163576101636106f6565b90506020028101906101759190610729565b61017f908061073d565b8381811061007f5761007f6106f6565b600101610117565b5060010161010d565b506040517fbb47ee3e183a558b1a2ff0874b079f3fc5478b7454eacf2bfc5af2ff5878f972905f90a15f5b828110156102a4578383828181106101e5576101e56106f6565b90506020028101906101f79190610729565b610208906040810190602001610783565b6001600160a01b03167f575ff3acadd5ab348fe1855e217e0f3678f8d767d7494c9f9fefbee2e17cca4d60405160405180910390a2365f858584818110610251576102516106f6565b90506020028101906102639190610729565b61026d908061073d565b90925090505f5b81811015610299576102918383838181106100e6576100e66106f6565b600101610274565b5050506001016101cb565b506040515f907f575ff3acadd5ab348fe1855e217e0f3678f8d767d7494c9f9fefbee2e17cca4d908290a2505050565b60146102e360408301836107a5565b9050116102ed5750565b5f6102fb60408301836107a5565b610309916014915f916107e8565b6103129161080f565b60601c61032260408401846107a5565b6103309160149082906107e8565b60405161033e92919061085c565b5f604051808303815f865af19150503d805f8114610377576040519150601f19603f3d011682016040523d82523d5f602084013e61037c565b606091505b50509050806103d25760405162461bcd60e51b815260206004820152601f60248201527f4d696e69456e747279506f696e743a20696e6974436f6465206661696c65640060448201526064015b60405180910390fd5b5050565b5f6103e46020830183610783565b6001600160a01b03166103fa60608401846107a5565b60405161040892919061085c565b5f604051808303815f865af19150503d805f8114610441576040519150601f19603f3d011682016040523d82523d5f602084013e610446565b606091505b509091505f9050601461045c60e08501856107a5565b9050101561046a575f610492565b61047760e08401846107a5565b610485916014915f916107e8565b61048e9161080f565b60601c5b905060146104a360e08501856107a5565b90501115610570575f6001600160a01b0382166104c360e08601866107a5565b6104d19160149082906107e8565b6040516104df92919061085c565b5f604051808303815f865af19150503d805f8114610518576040519150601f19603f3d011682016040523d82523d5f602084013e61051d565b606091505b505090508061056e5760405162461bcd60e51b815260206004820152601d60248201527f4d696e69456e747279506f696e743a20706f73744f70206661696c656400000060448201526064016103c9565b505b5f61057e6020850185610783565b604080516001600160a01b039092166020838101919091528601359082015230606082015246608082015260a00160408051601f19818403018152919052805160209182012091506001600160a01b038316906105dd90860186610783565b6001600160a01b0316827f49628fd1471006c1482da88028e9ce4dbb080b815c9b0344d39e5a8e6ec1419f8760200135875f5f604051610636949392919093845291151560208401526040830152606082015260800190565b60405180910390a450505050565b5f5f83601f840112610654575f5ffd5b50813567ffffffffffffffff81111561066b575f5ffd5b6020830191508360208260051b8501011115610685575f5ffd5b9250929050565b6001600160a01b03811681146106a0575f5ffd5b50565b5f5f5f604084860312156106b5575f5ffd5b833567ffffffffffffffff8111156106cb575f5ffd5b6106d786828701610644565b90945092505060208401356106eb8161068c565b809150509250925092565b634e487b7160e01b5f52603260045260245ffd5b5f823561011e1983360301811261071f575f5ffd5b9190910192915050565b5f8235605e1983360301811261071f575f5ffd5b5f5f8335601e19843603018112610752575f5ffd5b83018035915067ffffffffffffffff82111561076c575f5ffd5b6020019150600581901b3603821315610685575f5ffd5b5f60208284031215610793575f5ffd5b813561079e8161068c565b9392505050565b5f5f8335601e198436030181126107ba575f5ffd5b83018035915067ffffffffffffffff8211156107d4575f5ffd5b602001915036819003821315610685575f5ffd5b5f5f858511156107f6575f5ffd5b83861115610802575f5ffd5b5050820193919092039150565b80356bffffffffffffffffffffffff198116906014841015610855576bffffffffffffffffffffffff196bffffffffffffffffffffffff198560140360031b1b82161691505b5092915050565b818382375f910190815291905056fea26469706673582212209090cfd7be1b778d421e424b25c13695007893c6e000bec7b77993473bad9d8764736f6c634300081e0033";
