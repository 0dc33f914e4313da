// Generated from FlashTestToken.sol by scripts/compileContracts.mjs (npm run compile:contracts). Do not edit.
// solc 0.8.30+commit.73712a01.Emscripten.clang, optimizer 200 runs, evmVersion cancun.
import type { Hex } from "viem";

export const flashTestTokenAbi = [
  {
    "inputs": [
      {
        "internalType": "string",
        "name": "name_",
        "type": "string"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "constructor"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "owner",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "spender",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      }
    ],
    "name": "Approval",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "authorizer",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      }
    ],
    "name": "AuthorizationCanceled",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "authorizer",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      }
    ],
    "name": "AuthorizationUsed",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      }
    ],
    "name": "Transfer",
    "type": "event"
  },
  {
    "inputs": [],
    "name": "CANCEL_AUTHORIZATION_TYPEHASH",
    "outputs": [
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "DOMAIN_SEPARATOR",
    "outputs": [
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "RECEIVE_WITH_AUTHORIZATION_TYPEHASH",
    "outputs": [
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "TRANSFER_WITH_AUTHORIZATION_TYPEHASH",
    "outputs": [
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "allowance",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "spender",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      }
    ],
    "name": "approve",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "authorizer",
        "type": "address"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      }
    ],
    "name": "authorizationState",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "balanceOf",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "authorizer",
        "type": "address"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      },
      {
        "internalType": "uint8",
        "name": "v",
        "type": "uint8"
      },
      {
        "internalType": "bytes32",
        "name": "r",
        "type": "bytes32"
      },
      {
        "internalType": "bytes32",
        "name": "s",
        "type": "bytes32"
      }
    ],
    "name": "cancelAuthorization",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "authorizer",
        "type": "address"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "signature",
        "type": "bytes"
      }
    ],
    "name": "cancelAuthorization",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "decimals",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address[]",
        "name": "to",
        "type": "address[]"
      },
      {
        "internalType": "uint256[]",
        "name": "values",
        "type": "uint256[]"
      }
    ],
    "name": "emitTransfers",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "amount",
        "type": "uint256"
      }
    ],
    "name": "mint",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "name",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validAfter",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validBefore",
        "type": "uint256"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "signature",
        "type": "bytes"
      }
    ],
    "name": "receiveWithAuthorization",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validAfter",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validBefore",
        "type": "uint256"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      },
      {
        "internalType": "uint8",
        "name": "v",
        "type": "uint8"
      },
      {
        "internalType": "bytes32",
        "name": "r",
        "type": "bytes32"
      },
      {
        "internalType": "bytes32",
        "name": "s",
        "type": "bytes32"
      }
    ],
    "name": "receiveWithAuthorization",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "symbol",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "totalSupply",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      }
    ],
    "name": "transfer",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      }
    ],
    "name": "transferFrom",
    "outputs": [
      {
        "internalType": "bool",
        "name": "",
        "type": "bool"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validAfter",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validBefore",
        "type": "uint256"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "signature",
        "type": "bytes"
      }
    ],
    "name": "transferWithAuthorization",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "from",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validAfter",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "validBefore",
        "type": "uint256"
      },
      {
        "internalType": "bytes32",
        "name": "nonce",
        "type": "bytes32"
      },
      {
        "internalType": "uint8",
        "name": "v",
        "type": "uint8"
      },
      {
        "internalType": "bytes32",
        "name": "r",
        "type": "bytes32"
      },
      {
        "internalType": "bytes32",
        "name": "s",
        "type": "bytes32"
      }
    ],
    "name": "transferWithAuthorization",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "version",
    "outputs": [
      {
        "internalType": "string",
        "name": "",
        "type": "string"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  }
] as const;

export const flashTestTokenBytecode: Hex = "0x608060405234801561000f575f5ffd5b50604051611a00380380611a0083398101604081905261002e91610054565b5f6100398282610188565b5050610242565b634e487b7160e01b5f52604160045260245ffd5b5f60208284031215610064575f5ffd5b81516001600160401b03811115610079575f5ffd5b8201601f81018413610089575f5ffd5b80516001600160401b038111156100a2576100a2610040565b604051601f8201601f19908116603f011681016001600160401b03811182821017156100d0576100d0610040565b6040528181528282016020018610156100e7575f5ffd5b8160208401602083015e5f91810160200191909152949350505050565b600181811c9082168061011857607f821691505b60208210810361013657634e487b7160e01b5f52602260045260245ffd5b50919050565b601f82111561018357805f5260205f20601f840160051c810160208510156101615750805b601f840160051c820191505b81811015610180575f815560010161016d565b50505b505050565b81516001600160401b038111156101a1576101a1610040565b6101b5816101af8454610104565b8461013c565b6020601f8211600181146101e7575f83156101d05750848201515b5f19600385901b1c1916600184901b178455610180565b5f84815260208120601f198516915b8281101561021657878501518255602094850194600190920191016101f6565b508482101561023357868401515f19600387901b60f8161c191681555b50505050600190811b01905550565b6117b18061024f5f395ff3fe608060405234801561000f575f5ffd5b5060043610610148575f3560e01c80637f2eecc3116100bf578063cf09299511610079578063cf092995146102fa578063d91694871461030d578063dd62ed3e14610334578063e3ee160e1461035e578063e94a010214610371578063ef55bec6146103a9575f5ffd5b80637f2eecc31461025057806388b7ab631461027757806395d89b411461028a578063a0cc6a68146102ad578063a9059cbb146102d4578063b7b72899146102e7575f5ffd5b80633644e515116101105780633644e515146101d157806340c10f19146101d957806354fd4d50146101ee5780635a049a701461020b57806370a082311461021e5780637a1774801461023d575f5ffd5b806306fdde031461014c578063095ea7b31461016a57806318160ddd1461018d57806323b872dd146101a4578063313ce567146101b7575b5f5ffd5b6101546103bc565b60405161016191906111ca565b60405180910390f35b61017d6101783660046111fe565b610447565b6040519015158152602001610161565b61019660015481565b604051908152602001610161565b61017d6101b2366004611226565b6104b3565b6101bf600681565b60405160ff9091168152602001610161565b610196610588565b6101ec6101e73660046111fe565b610635565b005b6040805180820190915260018152601960f91b6020820152610154565b6101ec610219366004611270565b6106bb565b61019661022c3660046112ba565b60026020525f908152604090205481565b6101ec61024b36600461131b565b6106f0565b6101967fd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de881565b6101ec610285366004611426565b61078c565b610154604051806040016040528060048152602001635553444360e01b81525081565b6101967f7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a226781565b61017d6102e23660046111fe565b6107ed565b6101ec6102f53660046114a5565b610802565b6101ec610308366004611426565b610812565b6101967f158b0a9edf7a828aad02f63cd515c68ef2f50ba807396f6d12842833a159742981565b6101966103423660046114f8565b600360209081525f928352604080842090915290825290205481565b6101ec61036c366004611529565b610842565b61017d61037f3660046111fe565b6001600160a01b03919091165f908152600460209081526040808320938352929052205460ff1690565b6101ec6103b7366004611529565b6108a0565b5f80546103c8906115a4565b80601f01602080910402602001604051908101604052809291908181526020018280546103f4906115a4565b801561043f5780601f106104165761010080835404028352916020019161043f565b820191905f5260205f20905b81548152906001019060200180831161042257829003601f168201915b505050505081565b335f8181526003602090815260408083206001600160a01b038716808552925280832085905551919290917f8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925906104a19086815260200190565b60405180910390a35060015b92915050565b6001600160a01b0383165f90815260036020908152604080832033845290915281205482111561053b5760405162461bcd60e51b815260206004820152602860248201527f45524332303a207472616e7366657220616d6f756e74206578636565647320616044820152676c6c6f77616e636560c01b60648201526084015b60405180910390fd5b6001600160a01b0384165f9081526003602090815260408083203384529091528120805484929061056d9084906115f0565b9091555061057e9050848484610907565b5060019392505050565b5f7f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f5f6040516105b89190611603565b60408051918290038220828201825260018352601960f91b6020938401528151928301939093528101919091527fad7c5bef027816a800da1736444fb58a807ef4c9603b7848673f7e3a68eb14a560608201524660808201523060a082015260c00160405160208183030381529060405280519060200120905090565b8060015f828254610646919061169f565b90915550506001600160a01b0382165f908152600260205260408120805483929061067290849061169f565b90915550506040518181526001600160a01b038316905f907fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef9060200160405180910390a35050565b6106e985858484876040516020016106d5939291906116b2565b604051602081830303815290604052610aef565b5050505050565b8281146107315760405162461bcd60e51b815260206004820152600f60248201526e0d8cadccee8d040dad2e6dac2e8c6d608b1b6044820152606401610532565b5f5b838110156106e95761078433868684818110610751576107516116d5565b905060200201602081019061076691906112ba565b858585818110610778576107786116d5565b90506020020135610907565b600101610733565b6001600160a01b03861633146107b45760405162461bcd60e51b8152600401610532906116e9565b6107e47fd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de888888888888888610bbe565b50505050505050565b5f6107f9338484610907565b50600192915050565b61080d838383610aef565b505050565b6107e47f7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a226788888888888888610bbe565b6108957f7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a22678a8a8a8a8a8a89898c604051602001610881939291906116b2565b604051602081830303815290604052610bbe565b505050505050505050565b6001600160a01b03881633146108c85760405162461bcd60e51b8152600401610532906116e9565b6108957fd099cc98ef71107a616c4f0f941f04c322d8e254fe26b3c6668db87aae413de88a8a8a8a8a8a89898c604051602001610881939291906116b2565b6001600160a01b03831661096b5760405162461bcd60e51b815260206004820152602560248201527f45524332303a207472616e736665722066726f6d20746865207a65726f206164604482015264647265737360d81b6064820152608401610532565b6001600160a01b0382166109cd5760405162461bcd60e51b815260206004820152602360248201527f45524332303a207472616e7366657220746f20746865207a65726f206164647260448201526265737360e81b6064820152608401610532565b6001600160a01b0383165f90815260026020526040902054811115610a435760405162461bcd60e51b815260206004820152602660248201527f45524332303a207472616e7366657220616d6f756e7420657863656564732062604482015265616c616e636560d01b6064820152608401610532565b6001600160a01b0383165f9081526002602052604081208054839290610a6a9084906115f0565b90915550506001600160a01b0382165f9081526002602052604081208054839290610a9690849061169f565b92505081905550816001600160a01b0316836001600160a01b03167fddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef83604051610ae291815260200190565b60405180910390a3505050565b610af98383610d4a565b604080517f158b0a9edf7a828aad02f63cd515c68ef2f50ba807396f6d12842833a159742960208201526001600160a01b03851691810191909152606081018390525f90608001604051602081830303815290604052805190602001209050610b63848284610dd8565b6001600160a01b0384165f818152600460209081526040808320878452909152808220805460ff19166001179055518592917f1cdd46ff242716cdaa72d159d339a485b3438398348d68f09d7c8c0a59353d8191a350505050565b834211610c215760405162461bcd60e51b815260206004820152602b60248201527f46696174546f6b656e56323a20617574686f72697a6174696f6e206973206e6f60448201526a1d081e595d081d985b1a5960aa1b6064820152608401610532565b824210610c7e5760405162461bcd60e51b815260206004820152602560248201527f46696174546f6b656e56323a20617574686f72697a6174696f6e2069732065786044820152641c1a5c995960da1b6064820152608401610532565b610c888783610d4a565b6040805160208082018b90526001600160a01b038a811683850152891660608301526080820188905260a0820187905260c0820186905260e0808301869052835180840390910181526101009092019092528051910120610cea888284610dd8565b6001600160a01b0388165f818152600460209081526040808320878452909152808220805460ff19166001179055518592917f98de503528ee59b575ef0c0a2576a82497bfc029a5685b209e9ec333479b10a591a3610895888888610907565b6001600160a01b0382165f90815260046020908152604080832084845290915290205460ff1615610dd45760405162461bcd60e51b815260206004820152602e60248201527f46696174546f6b656e56323a20617574686f72697a6174696f6e20697320757360448201526d1959081bdc8818d85b98d95b195960921b6064820152608401610532565b5050565b5f610de1610588565b60405161190160f01b60208201526022810191909152604281018490526062016040516020818303038152906040528051906020012090505f5f856001600160a01b03163b1115610f12575f5f866001600160a01b0316631626ba7e60e01b8587604051602401610e5392919061172e565b60408051601f198184030181529181526020820180516001600160e01b03166001600160e01b0319909416939093179092529051610e91919061174e565b5f60405180830381855afa9150503d805f8114610ec9576040519150601f19603f3d011682016040523d82523d5f602084013e610ece565b606091505b5091509150818015610ee257506020815110155b8015610f0957508051630b135d3f60e11b90610f079083016020908101908401611764565b145b92505050610f33565b846001600160a01b0316610f268385610f80565b6001600160a01b03161490505b806106e95760405162461bcd60e51b815260206004820152601e60248201527f46696174546f6b656e56323a20696e76616c6964207369676e617475726500006044820152606401610532565b5f8151604114610fde5760405162461bcd60e51b815260206004820152602360248201527f45435265636f7665723a20696e76616c6964207369676e6174757265206c656e6044820152620cee8d60eb1b6064820152608401610532565b6020820151604083015160608401515f1a7f7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a082111561106e5760405162461bcd60e51b815260206004820152602660248201527f45435265636f7665723a20696e76616c6964207369676e6174757265202773276044820152652076616c756560d01b6064820152608401610532565b8060ff16601b148061108357508060ff16601c145b6110de5760405162461bcd60e51b815260206004820152602660248201527f45435265636f7665723a20696e76616c6964207369676e6174757265202776276044820152652076616c756560d01b6064820152608401610532565b604080515f8082526020820180845289905260ff841692820192909252606081018590526080810184905260019060a0016020604051602081039080840390855afa15801561112f573d5f5f3e3d5ffd5b5050604051601f1901519150506001600160a01b0381166111925760405162461bcd60e51b815260206004820152601c60248201527f45435265636f7665723a20696e76616c6964207369676e6174757265000000006044820152606401610532565b9695505050505050565b5f81518084528060208401602086015e5f602082860101526020601f19601f83011685010191505092915050565b602081525f6111dc602083018461119c565b9392505050565b80356001600160a01b03811681146111f9575f5ffd5b919050565b5f5f6040838503121561120f575f5ffd5b611218836111e3565b946020939093013593505050565b5f5f5f60608486031215611238575f5ffd5b611241846111e3565b925061124f602085016111e3565b929592945050506040919091013590565b803560ff811681146111f9575f5ffd5b5f5f5f5f5f60a08688031215611284575f5ffd5b61128d866111e3565b9450602086013593506112a260408701611260565b94979396509394606081013594506080013592915050565b5f602082840312156112ca575f5ffd5b6111dc826111e3565b5f5f83601f8401126112e3575f5ffd5b50813567ffffffffffffffff8111156112fa575f5ffd5b6020830191508360208260051b8501011115611314575f5ffd5b9250929050565b5f5f5f5f6040858703121561132e575f5ffd5b843567ffffffffffffffff811115611344575f5ffd5b611350878288016112d3565b909550935050602085013567ffffffffffffffff81111561136f575f5ffd5b61137b878288016112d3565b95989497509550505050565b634e487b7160e01b5f52604160045260245ffd5b5f82601f8301126113aa575f5ffd5b813567ffffffffffffffff8111156113c4576113c4611387565b604051601f8201601f19908116603f0116810167ffffffffffffffff811182821017156113f3576113f3611387565b60405281815283820160200185101561140a575f5ffd5b816020850160208301375f918101602001919091529392505050565b5f5f5f5f5f5f5f60e0888a03121561143c575f5ffd5b611445886111e3565b9650611453602089016111e3565b955060408801359450606088013593506080880135925060a0880135915060c088013567ffffffffffffffff81111561148a575f5ffd5b6114968a828b0161139b565b91505092959891949750929550565b5f5f5f606084860312156114b7575f5ffd5b6114c0846111e3565b925060208401359150604084013567ffffffffffffffff8111156114e2575f5ffd5b6114ee8682870161139b565b9150509250925092565b5f5f60408385031215611509575f5ffd5b611512836111e3565b9150611520602084016111e3565b90509250929050565b5f5f5f5f5f5f5f5f5f6101208a8c031215611542575f5ffd5b61154b8a6111e3565b985061155960208b016111e3565b975060408a0135965060608a0135955060808a0135945060a08a0135935061158360c08b01611260565b989b979a50959894979396929550929360e081013593506101000135919050565b600181811c908216806115b857607f821691505b6020821081036115d657634e487b7160e01b5f52602260045260245ffd5b50919050565b634e487b7160e01b5f52601160045260245ffd5b818103818111156104ad576104ad6115dc565b5f5f83545f8160011c9050600182168061161e57607f821691505b60208210810361163c57634e487b7160e01b5f52602260045260245ffd5b808015611650576001811461166557611693565b60ff1984168752821515830287019450611693565b5f888152602090205f5b8481101561168b5781548982015260019091019060200161166f565b505082870194505b50929695505050505050565b808201808211156104ad576104ad6115dc565b928352602083019190915260f81b6001600160f81b031916604082015260410190565b634e487b7160e01b5f52603260045260245ffd5b60208082526025908201527f46696174546f6b656e56323a2063616c6c6572206d7573742062652074686520604082015264706179656560d81b606082015260800190565b828152604060208201525f611746604083018461119c565b949350505050565b5f82518060208501845e5f920191825250919050565b5f60208284031215611774575f5ffd5b505191905056fea2646970667358221220e5dcee8177a104982581083781e320eb7731519ac64e79e7df11dd4fe6aff07864736f6c634300081e0033";
