// Pushed models waiting to be merged: filled by the receiving threads, emptied by the training thread.
#pragma once
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/algo/mailbox.hpp"

namespace distsgd::algo::decentralized {

using Inbox = Mailbox<PushMessage>;

}  // namespace distsgd::algo::decentralized
